package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
)

// openPTY opens a pseudo-terminal: the program side (a terminal to
// isTerminal) and the side a terminal emulator reads.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	testutil.Require(t, err == nil, fmt.Sprintf("no pseudo-terminals here: %v", err))
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the pty: %v", err)
	}
	// Raw mode: what the program writes reaches the master unchanged (no
	// \n to \r\n).
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// readAvailable reads what the master side holds once the writer is done.
func readAvailable(t *testing.T, m *os.File) string {
	t.Helper()
	var out bytes.Buffer
	buf := make([]byte, 4096)
	fd := int(m.Fd())
	for {
		// Everything was written before this call: the poll's timeout
		// only ends the reading once the pty is drained.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 500)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			return out.String()
		}
		r, err := unix.Read(fd, buf)
		if r <= 0 || err != nil {
			return out.String()
		}
		out.Write(buf[:r])
	}
}

// hostile is what a program prints to take over its caller's terminal: a
// clipboard write (OSC 52), a window title, clear screen, a C1 CSI, a
// right-to-left override, a bell, and a lone invalid byte.
const hostile = "a\x1b]52;c;cm0gLXJmIH4K\x07b\x1b]0;pwned\x07c\x1b[2Jd\u009b31me\u202ef\x07g\xffh\tk\rl"

// TestRunSanitizesTerminal: on a terminal, coderunner run shows the
// program's control characters as escapes, on stdout and stderr;
// --raw-output passes them; a pipe gets them unchanged.
func TestRunSanitizesTerminal(t *testing.T) {
	const want = `a\x1b]52;c;cm0gLXJmIH4K\x07b\x1b]0;pwned\x07c\x1b[2Jd\u009b31me\u202ef\x07g\xffh` + "\tk\rl\n"
	for _, stream := range []string{"print", "eprint"} {
		m, s := openPTY(t)
		ta := newApp(t, "")
		if stream == "print" {
			ta.Stdout = s
		} else {
			ta.Stderr = s
		}
		if code := ta.run("run", source(t, "a.fk", stream+" "+hostile)); code != 0 {
			t.Fatalf("%s: exit %d: %s", stream, code, ta.stderr)
		}
		got := readAvailable(t, m)
		if got != want {
			t.Errorf("%s on a terminal:\n got %q\nwant %q", stream, got, want)
		}
		if strings.ContainsAny(got, "\x1b\x07\u009b\u202e") {
			t.Errorf("%s: a control character reached the terminal: %q", stream, got)
		}
	}

	m, s := openPTY(t)
	ta := newApp(t, "")
	ta.Stdout = s
	if code := ta.run("run", "--raw-output", source(t, "a.fk", "print "+hostile)); code != 0 {
		t.Fatalf("--raw-output: exit %d: %s", code, ta.stderr)
	}
	if got := readAvailable(t, m); got != hostile+"\n" {
		t.Errorf("--raw-output:\n got %q\nwant %q", got, hostile+"\n")
	}

	ta = newApp(t, "")
	if code := ta.run("run", source(t, "a.fk", "print "+hostile)); code != 0 {
		t.Fatalf("pipe: exit %d", code)
	}
	if got := ta.stdout.String(); got != hostile+"\n" {
		t.Errorf("not a terminal: output changed to %q", got)
	}
}

// TestTermSafeSplitRunes: a UTF-8 sequence split across writes is kept
// whole, and an unfinished one is flushed as escapes.
func TestTermSafeSplitRunes(t *testing.T) {
	var b bytes.Buffer
	ts := &termSafe{w: &b}
	in := []byte("é€\u009b😀")
	for i := range in {
		if _, err := ts.Write(in[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = ts.Write([]byte{0xe2, 0x82})
	if err := ts.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `é€\u009b😀\xe2\x82`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

}

// TestJudgeTableSanitizesTerminal: the compiler's output that judge
// prints on a terminal (which echoes the submitted code) cannot drive it.
func TestJudgeTableSanitizesTerminal(t *testing.T) {
	m, s := openPTY(t)
	ta := newApp(t, "")
	ta.Stdout = s
	tests := source(t, "tests.json", `[{"input":"","expected_output":"x"}]`)
	code := ta.run("judge", "--tests", tests, source(t, "a.fkc", "compile error \x1b]0;pwned\x07 in main"))
	got := readAvailable(t, m)
	if code != 1 || !strings.Contains(got, "compilation failed:\n"+`\x1b]0;pwned\x07 in main`) || strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("judge on a terminal: exit %d, output %q; stderr %s", code, got, ta.stderr)
	}
}
