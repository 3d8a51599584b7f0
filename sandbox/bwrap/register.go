package bwrap

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	backend.Register("bwrap", func(o backend.Options) (sandbox.Backend, error) {
		opts := Options{Logger: o.Logger}
		if c, ok := o.Config.(*config.Config); ok && c != nil {
			opts.Path = c.Backend.BwrapPath
		}
		return New(opts)
	})
}
