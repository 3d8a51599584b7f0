package httpapi

import (
	_ "embed"
	"net/http"
	"strconv"
)

// OpenAPI is the OpenAPI 3.1 document of the service, served at
// /openapi.yaml. The contract tests check every endpoint's answers
// against it.
//
//go:embed openapi.yaml
var OpenAPI []byte

func handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Length", strconv.Itoa(len(OpenAPI)))
	_, _ = w.Write(OpenAPI)
}
