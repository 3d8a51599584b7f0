package native

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	backend.Register(backend.Module[config.NativeSection]{
		Name:    "native",
		Section: (*config.Config).NativeSection,
		New: func(e backend.Env, s config.NativeSection) (sandbox.Backend, error) {
			return New(Options{Logger: e.Logger, Warm: e.Warm, AllowRlimitsOnly: s.AllowRlimitsOnly, PerRequest: s.PerRequest})
		},
	})
}
