package judge

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/coderunner/coderunner/sandbox"
)

// fakeTool is a Program that runs as an Invocation: a checker, an
// interactor or an interactive solution, played by fn.
type fakeTool struct {
	fn func(ctx context.Context, inv Invocation) (*sandbox.Result, error)

	mu     sync.Mutex
	invs   []Invocation
	closed int
}

var _ Invoker = (*fakeTool)(nil)

func (f *fakeTool) Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error) {
	return f.Invoke(ctx, Invocation{Stdin: bytes.NewReader(stdin), Limits: limits})
}

func (f *fakeTool) Invoke(ctx context.Context, inv Invocation) (*sandbox.Result, error) {
	f.mu.Lock()
	f.invs = append(f.invs, inv)
	f.mu.Unlock()
	// The Result keeps what the program wrote, as a backend's does.
	var rec recorder
	if inv.Stdout != nil {
		rec.w = inv.Stdout
		inv.Stdout = &rec
	}
	res, err := f.fn(ctx, inv)
	if res != nil && len(res.Stdout) == 0 {
		res.Stdout = rec.bytes()
	}
	return res, err
}

// recorder passes writes on and keeps a copy.
type recorder struct {
	w   io.Writer
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	return r.w.Write(p)
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

func (f *fakeTool) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return nil
}

func (f *fakeTool) invocations() []Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Invocation(nil), f.invs...)
}

// file returns the content of the invocation's file named name.
func (inv Invocation) file(name string) (string, bool) {
	for _, f := range inv.Files {
		if f.Path == name {
			return string(f.Content), true
		}
	}
	return "", false
}

// exitWith is a tool's end: exit code code, stdout and stderr written to
// the invocation's writers as a backend does.
func exitWith(inv Invocation, code int, stdout, stderr string) *sandbox.Result {
	if inv.Stdout != nil && stdout != "" {
		_, _ = inv.Stdout.Write([]byte(stdout))
	}
	if inv.Stderr != nil && stderr != "" {
		_, _ = inv.Stderr.Write([]byte(stderr))
	}
	r := result(sandbox.StatusOK, stdout, stderr)
	if code != 0 {
		r.Status, r.ExitCode = sandbox.StatusNonzeroExit, code
	}
	return r
}
