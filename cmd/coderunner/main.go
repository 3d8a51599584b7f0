// Command coderunner runs untrusted code in a sandbox: one program (run),
// a diagnosis of this machine (doctor), the language table (langs).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/coderunner/coderunner/internal/cli"

	// Backends register themselves with internal/backend; importing one
	// builds it into the binary.
	_ "github.com/coderunner/coderunner/sandbox/bwrap"
	_ "github.com/coderunner/coderunner/sandbox/docker"
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// version and commit are set at build time:
// go build -ldflags "-X main.version=1.2.3 -X main.commit=abc123".
var version, commit string

func main() {
	// SIGINT and SIGTERM cancel the run, which kills the sandboxed program
	// and everything it started before coderunner exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], version, commit)
	stop()
	os.Exit(code)
}
