package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

func TestRequestLine(t *testing.T) {
	s := &sandbox.Spec{Args: []string{"/bin/echo", "it's", "$(x)"}, Env: []string{"A='b'"}}
	line, ok := requestLine(s, "n0")
	want := `exec 3>&2 2>/dev/null; if cd -P -- '/workspace' 2>/dev/null; then (exec '/usr/bin/env' -i 'A='\''b'\''' '/bin/echo' 'it'\''s' '$(x)' </dev/null 2>&3 3>&-); s=$?; ` +
		`else echo 'coderunner-launcher: exec failed: no working directory' >&3; s=126; fi; ` +
		`k=; for f in /proc/[0-9]*; do case ${f#/proc/} in 1|$$) ;; *) k=+; break;; esac; done; ` +
		`printf '\000coderunner-end-%s %d%s\n' 'n0' "$s" "$k"; printf '\000coderunner-end-%s\n' 'n0' >&3; while :; do kill -STOP $$; done` + "\n"
	if !ok || line != want {
		t.Errorf("line %q, %v\nwant %q", line, ok, want)
	}
	s.Stdin = strings.NewReader("")
	if line, _ := requestLine(s, "n0"); strings.Contains(line, "</dev/null") {
		t.Errorf("a run with stdin gets /dev/null: %q", line)
	}
	if !sendable(s) {
		t.Error("not sendable")
	}
	for _, bad := range []*sandbox.Spec{
		{Args: []string{"/bin/sh", "-c", "a\nb"}},
		{Args: []string{"/bin/true"}, Env: []string{"A=\n"}},
		{Args: []string{"/bin/true"}, Dir: "/workspace/a\nb"},
		{Args: []string{"/bin/true", "\x00"}},
		{Args: []string{"/bin/true", strings.Repeat("x", maxRequestLine)}},
	} {
		if sendable(bad) {
			t.Errorf("%q %q %q sent", bad.Args, bad.Env, bad.Dir)
		}
	}
}

// TestEndWriter feeds a launcher's output in every way the engine may cut
// it: the program's bytes pass, at once unless they could start the end
// mark, and the launcher's bytes do not; what comes after the mark is
// written by what the program left, and passes.
func TestEndWriter(t *testing.T) {
	const mark = "\x00coderunner-end-abc"
	for _, tc := range []struct {
		status    string
		code      int
		leftovers bool
	}{{" 137", 137, false}, {" 0+", 0, true}, {" 3 +", 3, true}, {" x", -1, false}} {
		stream := "G> prompt\x00not the mark\x00coderunner-end-ab\x00coderunner-end-abc" + tc.status + "\nleft by a child"
		for cut := 1; cut <= len(stream); cut++ {
			var out bytes.Buffer
			e := newEndWriter(&out, mark, true)
			for i := 0; i < len(stream); i += cut {
				if n, err := e.Write([]byte(stream[i:min(i+cut, len(stream))])); err != nil || n != min(cut, len(stream)-i) {
					t.Fatalf("cut %d: write %d, %v", cut, n, err)
				}
			}
			if !closed(e.ended) || !closed(e.took) {
				t.Fatalf("cut %d: end seen %v, G seen %v", cut, closed(e.ended), closed(e.took))
			}
			if want := "> prompt\x00not the mark\x00coderunner-end-ableft by a child"; out.String() != want || e.status != tc.code || e.leftovers != tc.leftovers {
				t.Errorf("status %q cut %d: passed %q status %d leftovers %v", tc.status, cut, out.String(), e.status, e.leftovers)
			}
		}
	}
	// On stderr, no status: what follows the mark's line passes.
	stream := "err\x00coderunner-end-abc\nlate"
	for cut := 1; cut <= len(stream); cut++ {
		var out bytes.Buffer
		e := newEndWriter(&out, mark, false)
		for i := 0; i < len(stream); i += cut {
			_, _ = e.Write([]byte(stream[i:min(i+cut, len(stream))]))
		}
		if !closed(e.ended) || out.String() != "errlate" {
			t.Errorf("stderr cut %d: end seen %v, passed %q", cut, closed(e.ended), out.String())
		}
	}
	// A prompt is passed at once; a possible start of the mark is held,
	// and passed when the stream ends without one.
	var out bytes.Buffer
	e := newEndWriter(&out, mark, false)
	_, _ = e.Write([]byte("Gname? "))
	if out.String() != "Gname? " {
		t.Errorf("stderr passed %q at once", out.String())
	}
	_, _ = e.Write([]byte("x\x00coder"))
	if out.String() != "Gname? x" {
		t.Errorf("passed %q, want the possible mark held", out.String())
	}
	e.flush()
	if out.String() != "Gname? x\x00coder" {
		t.Errorf("after the end, passed %q", out.String())
	}
	// A program that writes no G: its first byte is its own.
	out.Reset()
	e = newEndWriter(&out, mark, true)
	_, _ = e.Write([]byte("Hello"))
	if out.String() != "Hello" {
		t.Errorf("passed %q", out.String())
	}
}

// warmInternal is a backend with one warm container for shell runs.
func warmInternal(t *testing.T, opts Options) (*Backend, *sandbox.Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.Require(t, CheckAvailable(ctx, ""), "needs a Docker engine (start dockerd)")
	testutil.Require(t, exec.CommandContext(ctx, "docker", "image", "inspect", "coderunner/core:bookworm").Run() == nil,
		"needs the image coderunner/core:bookworm (scripts/build-images.sh core)")
	testutil.Require(t, os.Geteuid() == 0, "the docker warm pool mounts workspaces: needs root")
	tbl, err := lang.New(map[string]lang.Recipe{"bash": {Image: "coderunner/core:bookworm"}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Languages, opts.PullPolicy, opts.Warm = tbl, PullNever, 1
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	spec := &sandbox.Spec{Args: []string{"/bin/sh", "-c", "echo ran"}, Env: []string{"PATH=/usr/bin:/bin"},
		Limits: sandbox.Limits{WallTime: 30 * time.Second}}
	return b, spec
}

func waitIdle(t *testing.T, b *Backend) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); b.Warm().Idle == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warm container after a minute: %+v", b.Warm())
		}
	}
}

// TestLauncherDiesAfterTake: a launcher that dies after the run took its
// container, before it took the request, fails the run as not started,
// with errLauncher: Run then makes a container of its own.
func TestLauncherDiesAfterTake(t *testing.T) {
	b, spec := warmInternal(t, Options{})
	if _, err := b.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, b)
	s, err := sandbox.Prepared(spec)
	if err != nil {
		t.Fatal(err)
	}
	image := b.images.forSpec(s)
	bx := b.takeWarm(context.Background(), s, image, specKey(s, image))
	if bx == nil || !bx.runsLauncher() {
		t.Fatalf("took %+v, want a launched warm container", bx)
	}
	if err := unix.PidfdSendSignal(bx.launch.pidfd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
	if !pidfdReadable(bx.launch.pidfd, 10*time.Second) {
		t.Fatal("the launcher did not die")
	}
	res, err := b.runLaunched(context.Background(), bx, s)
	var ns notStarted
	if !errors.Is(err, errLauncher) || !errors.As(err, &ns) {
		t.Errorf("a run whose launcher died: %+v, %v; want errLauncher, not started", res, err)
	}
	if err := b.stopRun(context.Background(), bx); err != nil {
		t.Error(err)
	}
	if err := b.unmountWorkspace(bx); err != nil {
		t.Error(err)
	}
	b.release(bx, false)
}

// TestInteractiveFallsBack: the launcher of the warm container an
// interactive run took dies before it takes the request, while the
// client sends input (stdin that cannot be read twice, as /v1/run/ws
// gives it). The run is made in a container of its own, and the program
// reads every byte the client sent, once; the client sees its output
// only, once.
func TestInteractiveFallsBack(t *testing.T) {
	b, spec := warmInternal(t, Options{})
	if _, err := b.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, b)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	out := &syncBuffer{}
	killed := 0
	b.tookWarm = func(bx *box) {
		killed++
		if err := unix.PidfdSendSignal(bx.launch.pidfd, unix.SIGKILL, nil, 0); err != nil {
			t.Error(err)
		}
		if !pidfdReadable(bx.launch.pidfd, 10*time.Second) {
			t.Error("the launcher did not die")
		}
		// The client goes on: a line now, another once the program
		// answered, then the end.
		_, _ = pw.WriteString("two\n")
		go func() {
			for deadline := time.Now().Add(time.Minute); !strings.HasSuffix(out.String(), "two\n"); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					break
				}
			}
			_, _ = pw.WriteString("three\n")
			_ = pw.Close()
		}()
	}
	s := *spec
	s.Args = []string{"/bin/sh", "-c", "cat; echo end >&2"}
	// As the executor gives an interactive run its input: the request's
	// stdin, then the client's, neither of which can be read again.
	s.Stdin = io.MultiReader(strings.NewReader("one\n"), struct{ io.Reader }{pr})
	s.Stdout = out
	res, err := b.Run(context.Background(), &s)
	if err != nil {
		t.Fatalf("the run failed (%v): want it made again in a container of its own", err)
	}
	if killed != 1 {
		t.Fatalf("%d launchers killed, want 1", killed)
	}
	const want = "one\ntwo\nthree\n"
	if res.Status != sandbox.StatusOK || string(res.Stdout) != want || string(res.Stderr) != "end\n" || out.String() != want {
		t.Errorf("status %s stdout %q stderr %q, the client saw %q: want ok, %q and end", res.Status, res.Stdout, res.Stderr, out.String(), want)
	}
}

// syncBuffer is a buffer written by a run and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestGate: a launched run found not started lets nothing cross the
// launcher any more, and one that let something cross is never found
// not started.
func TestGate(t *testing.T) {
	p := &launched{}
	first, again := p.abandon(), p.abandon()
	if !first || !again || p.begin() {
		t.Error("an abandoned run lets its stdin or output cross")
	}
	var out bytes.Buffer
	e := newEndWriter(&out, "\x00coderunner-end-n", false)
	e.begin = p.begin
	_, _ = e.Write([]byte("output"))
	if out.Len() != 0 {
		t.Errorf("an abandoned run passed %q on", out.String())
	}
	p = &launched{}
	first, again = p.begin(), p.begin()
	if !first || !again || p.abandon() {
		t.Error("a run that let something cross is found not started")
	}
}

// TestNoShellNoPool: an image without /bin/sh is found out by its first
// warm container, once; its pool goes, and its runs take none.
func TestNoShellNoPool(t *testing.T) {
	const image = "coderunner-test/noshell:1"
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	_ = tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("hi\n"))
	_ = tw.Close()
	b, _ := warmInternal(t, Options{DefaultImage: image})
	imp := exec.Command("docker", "import", "-", image)
	imp.Stdin = &tarball
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })
	spec := &sandbox.Spec{Args: []string{"/hello"}, Limits: sandbox.Limits{WallTime: 30 * time.Second}}
	// Nothing runs it (no /usr/bin/env either): only the pool matters.
	_, _ = b.Run(context.Background(), spec)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := b.noShell.Load(image); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the image without /bin/sh is not known as such after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.mu.Lock()
	pools := len(b.pools)
	b.mu.Unlock()
	if pools != 0 || b.Warm().Made != 0 {
		t.Errorf("%d pools, %+v: want none for the image", pools, b.Warm())
	}
	_, _ = b.Run(context.Background(), spec)
	b.mu.Lock()
	pools = len(b.pools)
	b.mu.Unlock()
	if pools != 0 {
		t.Errorf("a run of the image made a pool again")
	}
}
