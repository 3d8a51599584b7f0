package native_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// inspected is what an Inspect saw of a run's private workspace.
type inspected struct {
	calls int
	names []string
	big   int64
}

// inspectInto returns a Spec.Inspect that records in seen what the root
// it is given holds, and the size of its file "big" if there is one.
func inspectInto(t *testing.T, seen *inspected) func(*os.File) {
	return func(root *os.File) {
		seen.calls++
		names, err := root.Readdirnames(-1)
		if err != nil {
			t.Errorf("the workspace handed over cannot be listed: %v", err)
		}
		slices.Sort(names)
		seen.names = names
		var st unix.Stat_t
		if unix.Fstatat(int(root.Fd()), "big", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			seen.big = st.Size
		}
	}
}

// TestInspect checks Spec.Inspect on a sandbox per request and on one the
// backend keeps: the caller gets the run's private workspace with what
// the program left there (its own files among them, no link followed);
// the next run of a kept sandbox finds an empty workspace, and none of
// the memory the caller held while reading is charged to it.
func TestInspect(t *testing.T) {
	for _, tt := range []struct {
		name       string
		perRequest bool
	}{{"per request", true}, {"kept", false}} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackendWith(t, native.Options{PerRequest: tt.perRequest})
			var seen inspected
			res := reuseRun(t, b, func(s *sandbox.Spec) {
				s.Files = []sandbox.File{{Path: "given.txt", Content: []byte("x")}}
				s.Inspect = inspectInto(t, &seen)
			}, "/bin/sh", "-c", "echo out > out.txt; head -c 24000000 /dev/zero > big; ln -s /etc/passwd link")
			if seen.calls != 1 {
				t.Fatalf("Inspect called %d times, want once (status %s)", seen.calls, res.Status)
			}
			if want := []string{"big", "given.txt", "link", "out.txt"}; !slices.Equal(seen.names, want) {
				t.Errorf("the workspace handed over holds %v, want %v", seen.names, want)
			}
			if seen.big != 24000000 {
				t.Errorf("big has %d bytes in the workspace handed over, want 24000000", seen.big)
			}
			before := native.ReusedRuns(b)
			res = keptRun(t, b, nil, "/bin/sh", "-c", "ls -A /workspace; echo end")
			if reused := native.ReusedRuns(b) > before; reused == tt.perRequest {
				t.Fatalf("the second run reused the first's sandbox: %v", reused)
			}
			if string(res.Stdout) != "end\n" {
				t.Errorf("the second run's workspace holds %q", res.Stdout)
			}
			if res.PeakMemory > 16<<20 {
				t.Errorf("the second run is charged the first's workspace: peak memory %d bytes", res.PeakMemory)
			}
		})
	}
	if err := waitCleanNative(); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

// TestInspectAfterTimeout checks that a run stopped at its time limit
// still hands its workspace over, once its sandbox is gone, and that the
// kept sandbox is not used again.
func TestInspectAfterTimeout(t *testing.T) {
	b := newBackend(t)
	var seen inspected
	spec := &sandbox.Spec{
		Args:    []string{"/bin/sh", "-c", "echo partial > part.txt; sleep 60"},
		Mounts:  native.BaseMounts(),
		Limits:  sandbox.Limits{WallTime: time.Second},
		Inspect: inspectInto(t, &seen),
	}
	res, err := b.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusTimeLimit {
		t.Fatalf("status %s, want timeout", res.Status)
	}
	if seen.calls != 1 || !slices.Equal(seen.names, []string{"part.txt"}) {
		t.Fatalf("Inspect called %d times with %v, want once with [part.txt]", seen.calls, seen.names)
	}
	before := native.ReusedRuns(b)
	reuseRun(t, b, nil, "/bin/true")
	if native.ReusedRuns(b) > before {
		t.Error("a sandbox stopped at its time limit served another run")
	}
}

// listFDs prints the shell's descriptors and what each is; the one the
// glob read the directory with is closed by the time it is checked.
const listFDs = `for f in /proc/$$/fd/*; do [ -e "$f" ] && echo "${f##*/} $(readlink "$f")"; done; true`

// TestInspectOutOfReach checks that the program of a run whose workspace
// is handed over has no way to it: none of its descriptors is the
// sandbox init's socket, a directory, or anything but its three streams.
func TestInspectOutOfReach(t *testing.T) {
	b := newBackend(t)
	for range 2 { // a new sandbox, then a kept one
		var seen inspected
		res := keptRun(t, b, func(s *sandbox.Spec) { s.Inspect = inspectInto(t, &seen) },
			"/bin/sh", "-c", listFDs)
		if seen.calls != 1 {
			t.Fatalf("Inspect called %d times", seen.calls)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
			fd, target, _ := strings.Cut(line, " ")
			if fd != "0" && fd != "1" && fd != "2" || strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "/") && target != "/dev/null" {
				t.Errorf("the program holds descriptor %s (%s)", fd, target)
			}
		}
	}
}
