package native

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	backend.Register("native", func(o backend.Options) (sandbox.Backend, error) {
		return New(Options{Logger: o.Logger, Warm: o.Warm})
	})
}
