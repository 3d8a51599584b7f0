package docker

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	backend.Register("docker", Open)
}

// Open is the backend registry's factory of the docker backend: New with
// the docker section and the language table of the configuration in
// o.Config (a *config.Config), if any.
func Open(o backend.Options) (sandbox.Backend, error) {
	opts := Options{Logger: o.Logger}
	if c, ok := o.Config.(*config.Config); ok && c != nil {
		opts.Host = c.Docker.Host
		opts.PullPolicy = c.Docker.PullPolicy
		opts.User = c.Docker.User
		opts.Reuse = c.Docker.ReuseContainers
		t, err := c.LanguageTable()
		if err != nil {
			return nil, err
		}
		opts.Languages = t
	}
	return New(opts)
}
