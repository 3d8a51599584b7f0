package docker

import (
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

func init() {
	backend.Register(Module)
}

// Module is the docker backend as the backend registry knows it: New with
// the configuration's docker section and language table.
var Module = backend.Module[config.DockerSection]{
	Name:    "docker",
	Section: (*config.Config).DockerSection,
	New: func(e backend.Env, s config.DockerSection) (sandbox.Backend, error) {
		return New(Options{
			Logger:     e.Logger,
			Host:       s.Host,
			PullPolicy: s.PullPolicy,
			User:       s.User,
			Reuse:      s.ReuseContainers,
			Languages:  s.Languages,
		})
	},
}
