package native

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// TestKeptSandboxRefusesSetupOps sends a kept sandbox's init later runs
// that ask for what only the first phases may do: it must refuse each,
// since its root is sealed and its bind sources are closed.
func TestKeptSandboxRefusesSetupOps(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := New(Options{})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	tests := []struct {
		name string
		op   func(*setup)
		want string
	}{
		{"bind", func(w *setup) { w.op(nsinit.OpBind, "/etc", "/workspace/etc", "rw") }, "op 3 in a later run"},
		{"tmpfs", func(w *setup) { w.op(nsinit.OpTmpfs, "/usr", "size=1m") }, "op 5 in a later run"},
		{"proc", func(w *setup) { w.op(nsinit.OpProc, "/workspace/proc") }, "op 7 in a later run"},
		{"device", func(w *setup) { w.op(nsinit.OpDev, "kmsg") }, "op 17 in a later run"},
		{"root", func(w *setup) { w.op(nsinit.OpRoot, "/") }, "op 1 in a later run"},
		{"attach without a mount", func(w *setup) { w.op(nsinit.OpAttach, "/workspace") }, "no mount sent for /workspace"},
		{"file outside the scratch mounts", func(w *setup) { w.file("/etc/passwd2", []byte("x"), 0o644, 0, 0) }, "create /etc/passwd2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ser := b.Series().(*series)
			defer ser.Close()
			res, err := ser.Run(context.Background(), &sandbox.Spec{
				Args: []string{"/bin/true"}, Mounts: BaseMounts(), Limits: sandbox.Limits{WallTime: 10 * time.Second},
			})
			if err != nil || res.Status != sandbox.StatusOK {
				t.Fatalf("first run: %v %+v", err, res)
			}
			if len(ser.idle) != 1 {
				t.Fatalf("%d sandboxes kept, want 1", len(ser.idle))
			}
			sp := ser.idle[0].sp
			if err := sp.whenReady(); err != nil {
				t.Fatal(err)
			}
			var w setup
			tt.op(&w)
			w.op(nsinit.OpUser, "1000", "1000")
			w.op(nsinit.OpCwd, "/")
			w.op(nsinit.OpArgv, "/bin/true")
			w.op(nsinit.OpEnv)
			if err := sp.newStreams(); err != nil {
				t.Fatal(err)
			}
			if err := sp.sendRun(frame(w.buf), nil); err != nil {
				t.Fatal(err)
			}
			line, _ := sp.readReport()
			if !strings.HasPrefix(string(line), "E ") || !strings.Contains(string(line), tt.want) {
				t.Fatalf("the init answered %q, want a refusal naming %q", line, tt.want)
			}
			st, err := sp.waitFor(exitWait)
			if err != nil {
				t.Fatal(err)
			}
			if st.Success() {
				t.Fatalf("the init went on after refusing: %v", st)
			}
		})
	}
}
