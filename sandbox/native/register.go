package native

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	// The native backend has no section of the configuration.
	backend.Register(backend.Module[struct{}]{
		Name: "native",
		New: func(e backend.Env, _ struct{}) (sandbox.Backend, error) {
			return New(Options{Logger: e.Logger, Warm: e.Warm})
		},
	})
}
