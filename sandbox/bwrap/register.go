package bwrap

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	backend.Register(backend.Module[config.BwrapSection]{
		Name:    "bwrap",
		Section: (*config.Config).BwrapSection,
		New: func(e backend.Env, s config.BwrapSection) (sandbox.Backend, error) {
			return New(Options{Logger: e.Logger, Path: s.Path, AllowRlimitsOnly: s.AllowRlimitsOnly})
		},
	})
}
