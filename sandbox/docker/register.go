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
// the configuration's docker section and language table. Warm containers
// are kept only for the commands that ask for sandboxes ahead of need
// (serve, mcp, judge), docker.warm of them.
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
			Warm:       warmFor(e, s.Docker),
			TempDir:    e.TempDir,
		})
	},
}

// warmFor is the warm containers of a backend made for e: docker.warm when
// the command runs more than one program, else none.
func warmFor(e backend.Env, d config.Docker) int {
	if e.Warm <= 0 {
		return 0
	}
	return d.Warm
}
