package coderunner

import (
	"context"

	"github.com/coderunner/coderunner/sandbox/docker"
)

// CheckDockerAvailable reports
// whether a Docker Engine answers at DOCKER_HOST or the local socket,
// within five seconds. It asks only the engine: whether the language
// images are present is the docker backend's probe (coderunner doctor).
// coderunner does not need Docker: ExecuteCode uses the strongest backend
// that works.
func CheckDockerAvailable(ctx context.Context) bool {
	return docker.CheckAvailable(ctx, "")
}
