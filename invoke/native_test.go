package invoke

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// nativeInvoker is an Invoker on the native sandbox, as root.
func nativeInvoker(t *testing.T, opts Options) *Invoker {
	t.Helper()
	testutil.RequireRoot(t)
	b, err := backend.Open(context.Background(), "native", backend.Options{})
	testutil.Require(t, err == nil, "the native backend does not work here")
	if c, ok := b.(interface{ Close() error }); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	return New(b, lang.Default(), opts)
}

func TestNativeHandlers(t *testing.T) {
	e := nativeInvoker(t, Options{})
	requireToolchain(t, "python")
	for _, tc := range handlerCases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, e, tc.name, tc.req, tc.want) })
	}
	requireToolchain(t, "javascript")
	for _, tc := range jsCases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, e, tc.name, tc.req, tc.want) })
	}
}

// TestNativeArtifacts: the files a handler leaves in its workspace are
// listed with size, type and checksum; hidden files, links and FIFOs are
// not. The workspace is the sandbox's own, handed back: none is made on
// the host.
func TestNativeArtifacts(t *testing.T) {
	work := t.TempDir()
	e := nativeInvoker(t, Options{WorkDir: work})
	requireToolchain(t, "python")
	code := `import os
def handler(event):
    os.makedirs('output', exist_ok=True)
    os.makedirs('plots', exist_ok=True)
    os.makedirs('outputs/january', exist_ok=True)
    open('output/result.csv', 'w').write('a' * 1024)
    open('plots/summary.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + b'\0' * (500 * 1024 - 8))
    open('outputs/january/report.pdf', 'wb').write(b'%PDF-1.4\n')
    open('.hidden_file.txt', 'w').write('hidden')
    os.symlink('/etc/passwd', 'link.txt')
    os.mkfifo('pipe')
    return len(os.listdir('.'))
`
	res := e.Run(context.Background(), Request{ExecutionID: "art", Language: "python", Code: code, Timeout: 20, Mode: ModeHandler})
	if res.Status != StatusSuccess {
		t.Fatalf("status %q: %s %s", res.Status, res.Message(), res.Stderr)
	}
	want := map[string]struct {
		size int64
		mime string
	}{
		"output/result.csv":          {1024, "text/csv"},
		"outputs/january/report.pdf": {9, "application/pdf"},
		"plots/summary.png":          {500 * 1024, "image/png"},
	}
	if len(res.Artifacts) != len(want) {
		t.Fatalf("artifacts %+v, want %v", res.Artifacts, want)
	}
	for _, a := range res.Artifacts {
		w, ok := want[a.Path]
		if !ok || a.Size != w.size || a.MimeType != w.mime || !strings.HasPrefix(a.Checksum, "sha256:") || a.Type != "artifact" || a.CreatedAt.IsZero() {
			t.Errorf("artifact %+v, want %+v", a, w)
		}
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("a workspace was made on the host: %v", left)
	}
}

// TestNativeIsolation: the code sees no host secrets (the executor's API
// token included), no network, no host files.
func TestNativeIsolation(t *testing.T) {
	t.Setenv("INTERNAL_API_TOKEN", "host-secret-token")
	e := nativeInvoker(t, Options{})
	requireToolchain(t, "python")
	code := `import os, socket
def handler(event):
    out = {'env': dict(os.environ)}
    try:
        socket.create_connection(('1.1.1.1', 80), timeout=2)
        out['net'] = 'connected'
    except OSError as e:
        out['net'] = str(e)
    out['cwd'] = os.getcwd()
    out['passwd'] = open('/etc/passwd').read() if os.path.exists('/etc/passwd') else ''
    return out
`
	res := e.Run(context.Background(), Request{ExecutionID: "iso", Language: "python", Code: code, Timeout: 20, Mode: ModeHandler})
	if res.Status != StatusSuccess {
		t.Fatalf("status %q: %s %s", res.Status, res.Message(), res.Stderr)
	}
	v := string(res.ReturnValue)
	if strings.Contains(v, "host-secret-token") || strings.Contains(v, "INTERNAL_API_TOKEN") {
		t.Errorf("the token reached the sandbox: %s", v)
	}
	if strings.Contains(v, `"net":"connected"`) {
		t.Error("the sandbox reached the network")
	}
	if !strings.Contains(v, `"cwd":"/workspace"`) {
		t.Errorf("working directory is not /workspace: %s", v)
	}
	host, _ := os.ReadFile("/etc/passwd")
	if len(host) > 0 && strings.Contains(v, strings.SplitN(string(host), "\n", 2)[0]+`\n`) && strings.Contains(string(host), "root:x:0:0") && strings.Count(v, ":") > strings.Count(string(host), ":") {
		t.Errorf("the host's /etc/passwd is visible: %s", v)
	}
}

// TestNativeWorkspaceCap: a run cannot write more than the workspace cap.
func TestNativeWorkspaceCap(t *testing.T) {
	e := nativeInvoker(t, Options{Limits: sandbox.Limits{WorkspaceSize: 2 * sandbox.MiB}})
	requireToolchain(t, "python")
	code := `def handler(event):
    try:
        with open('big', 'wb') as f:
            for _ in range(8):
                f.write(b'x' * (1 << 20))
                f.flush()
    except OSError as e:
        return 'refused: ' + e.strerror
    return 'wrote 8 MiB'
`
	res := e.Run(context.Background(), Request{ExecutionID: "cap", Language: "python", Code: code, Timeout: 20, Mode: ModeHandler})
	if res.Status != StatusSuccess || !strings.Contains(string(res.ReturnValue), "refused") {
		t.Errorf("status %q value %s: the 2 MiB workspace cap did not hold (%s; %s)", res.Status, res.ReturnValue, res.Stderr, res.Message())
	}
}

// TestNativeWorkspaceInodeCap: a run cannot pin kernel memory with files
// that take no room: the workspace's inodes are capped too.
func TestNativeWorkspaceInodeCap(t *testing.T) {
	e := nativeInvoker(t, Options{})
	requireToolchain(t, "python")
	code := `def handler(event):
    try:
        for i in range(200000):
            open('e%d' % i, 'w').close()
    except OSError as e:
        return 'refused: ' + e.strerror
    return 'made 200000 files'
`
	res := e.Run(context.Background(), Request{ExecutionID: "inodes", Language: "python", Code: code, Timeout: 60, Mode: ModeHandler})
	if res.Status != StatusSuccess || !strings.Contains(string(res.ReturnValue), "No space left") {
		t.Errorf("status %q value %s: the workspace's inode cap did not hold (%s; %s)", res.Status, res.ReturnValue, res.Stderr, res.Message())
	}
}
