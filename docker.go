package coderunner

import (
	"context"
	"io"
	"log/slog"

	"github.com/coderunner/coderunner/internal/backend"
)

// CheckDockerAvailable is spec 004's check_docker_available: it reports
// whether the docker backend is built into this program and can run
// containers here (the Docker Engine answers and the backend's probe
// passes). coderunner does not need Docker: ExecuteCode uses the strongest
// backend that works.
func CheckDockerAvailable(ctx context.Context) bool {
	b, err := backend.Open(ctx, "docker", backend.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return false
	}
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
	return true
}
