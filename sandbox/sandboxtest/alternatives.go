package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// AlternativesOpener opens a backend that binds the host directory dir at
// sandbox.AlternativesDir in place of the host's own.
type AlternativesOpener func(t *testing.T, dir string) sandbox.Backend

// TestAlternatives attacks the host directory a backend binds at
// /etc/alternatives, with a directory of the test's own in its place: a
// program may follow its links (one into /usr runs) but reaches nothing of
// the host through them, neither a file outside the mounted system (a host
// secret, /etc/shadow) nor the host's /etc through "..", and changes
// nothing in it. noexec says whether the backend binds it noexec (native
// does; bwrap's binds cannot be): a regular file there then does not run.
func TestAlternatives(t *testing.T, open AlternativesOpener, mounts []sandbox.Mount, noexec bool) {
	secretDir := testutil.ReachableDir(t, "alt-secret-")
	secret := filepath.Join(secretDir, "secret.txt")
	// Readable by every host user: only the sandbox's view may hide it.
	if err := os.WriteFile(secret, []byte("host-secret\n"), 0o644); err != nil { //nolint:gosec // see above
		t.Fatal(err)
	}
	dir := testutil.ReachableDir(t, "alternatives-")
	for name, target := range map[string]string{
		"shadow":   "/etc/shadow",
		"secret":   secret,
		"secrets":  secretDir,
		"up":       "../shadow",
		"host-etc": "/etc",
		"tool":     "/usr/bin/true",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("public\n"), 0o644); err != nil { //nolint:gosec // a public file, as Debian's
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run"), []byte("#!/bin/sh\necho RAN\n"), 0o755); err != nil { //nolint:gosec // the program tries to run it
		t.Fatal(err)
	}
	// Writable by every host user, the sandbox's among them: only the
	// read-only mount may stop the writes.
	for _, p := range []string{dir, filepath.Join(dir, "README")} {
		if err := os.Chmod(p, 0o777); err != nil { //nolint:gosec // see above
			t.Fatal(err)
		}
	}
	before := listing(t, dir)
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Fatalf("the host has no /etc/shadow to hide: %v", err)
	}

	b := open(t, dir)
	script := strings.Join([]string{
		"cd /etc/alternatives || exit 9",
		// Through the links and through "..": nothing of the host.
		"for f in shadow secret secrets/secret.txt up host-etc/shadow ../shadow host-etc/../shadow; do",
		"  cat \"$f\" >/dev/null 2>&1 && echo \"READ $f\"",
		"done",
		"ls host-etc/ | grep -qx shadow && echo 'LISTED shadow'",
		"ls secrets/ 2>/dev/null | grep -q . && echo 'LISTED secrets'",
		// Nothing written, removed, renamed, linked or changed.
		"(: > new) 2>/dev/null && echo WROTE new",
		"(echo x >> README) 2>/dev/null && echo WROTE README",
		"rm -f shadow 2>/dev/null; [ -L shadow ] || echo REMOVED shadow",
		"mv README moved 2>/dev/null && echo RENAMED README",
		"ln -s /x made 2>/dev/null && echo LINKED made",
		"mkdir d 2>/dev/null && echo MKDIR d",
		"chmod 777 README 2>/dev/null && echo CHMOD README",
		"touch -h -d 2001-01-01 tool 2>/dev/null && echo TOUCHED tool",
		// A link into the mounted system works; the public file is seen.
		"/etc/alternatives/tool && echo TOOL",
		"cat README",
		"./run 2>/dev/null",
		"grep ' /etc/alternatives ' /proc/self/mountinfo",
	}, "\n")
	spec := &sandbox.Spec{Args: []string{"/bin/sh", "-c", script}, Mounts: mounts}
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, res, sandbox.StatusOK)
	out := string(res.Stdout)
	for line := range strings.SplitSeq(out, "\n") {
		word, _, _ := strings.Cut(line, " ")
		if slices.Contains([]string{"READ", "LISTED", "WROTE", "REMOVED", "RENAMED", "LINKED", "MKDIR", "CHMOD", "TOUCHED", "host-secret"}, word) {
			t.Errorf("the sandbox got through /etc/alternatives: %s", line)
		}
	}
	for _, want := range []string{"TOOL\n", "public\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing: the links or files of /etc/alternatives are not there:\n%s%s", want, out, res.Stderr)
		}
	}
	if noexec && strings.Contains(out, "RAN") {
		t.Errorf("a file of /etc/alternatives ran, though it is mounted noexec:\n%s", out)
	}
	var line string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, " /etc/alternatives ") {
			line = l
		}
	}
	fields := strings.Fields(line)
	if len(fields) < 6 {
		t.Fatalf("no mount at /etc/alternatives:\n%s", out)
	}
	opts := strings.Split(fields[5], ",")
	want := []string{"ro", "nosuid", "nodev"}
	if noexec {
		want = append(want, "noexec")
	}
	for _, o := range want {
		if !slices.Contains(opts, o) {
			t.Errorf("/etc/alternatives is not mounted %s: %s", o, line)
		}
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Errorf("the host directory changed:\nbefore %q\nafter  %q", before, after)
	}
}

// listing describes every entry of dir: its name, mode and link target
// or content.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		what := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			what, _ = os.Readlink(p)
		} else if data, err := os.ReadFile(p); err == nil {
			what = string(data)
		}
		out = append(out, e.Name()+" "+fi.Mode().String()+" "+fi.ModTime().String()+" "+what)
	}
	return out
}
