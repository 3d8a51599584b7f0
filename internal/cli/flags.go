package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// MaxInputBytes bounds a source file and a --stdin file, so that a mistaken
// path (a disk image, /dev/zero) fails at once with a clear message instead
// of filling memory.
const MaxInputBytes = 16 << 20

// parseTimeout accepts a Go duration ("30s", "1500ms", "1m") or a bare
// number of seconds ("30", "2.5").
func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("%q is not a usable number of seconds", s)
		}
		d = time.Duration(secs * float64(time.Second))
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is neither a duration (30s, 1500ms) nor a number of seconds", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return d, nil
}

// readBounded reads all of r, refusing more than max bytes. name says what
// is read, for the error.
func readBounded(r io.Reader, max int64, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("unable to read %s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d MB", name, max>>20)
	}
	return b, nil
}

// readFileBounded reads a regular file of at most max bytes. Refusing
// anything but a regular file keeps a FIFO or device from blocking or
// streaming forever.
func readFileBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d MB", path, max>>20)
	}
	return readBounded(f, max, path)
}

// parseArgs parses flags and positional arguments in any order
// (`run main.py --json` as well as `run --json main.py`), which the flag
// package alone does not allow. A lone "-" is a positional argument and
// "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, rest, err := parseArgsDash(fs, args)
	return append(pos, rest...), err
}

// parseArgsDash is parseArgs keeping apart what follows "--": pos are
// the positional arguments before it, rest those after it.
func parseArgsDash(fs *flag.FlagSet, args []string) (pos, rest []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return pos, nil, nil
		}
		// flag stops at the first positional argument, or after a "--"
		// that it drops; only the consumed arguments tell which.
		consumed := args[:len(args)-len(left)]
		if n := len(consumed); n > 0 && consumed[n-1] == "--" && (n < 2 || !wantsValue(fs, consumed[n-2])) {
			return pos, left, nil
		}
		pos = append(pos, left[0])
		args = left[1:]
	}
}

// filesAndArgs splits the positional arguments of run and judge: the
// FILE, DIR or several FILEs before "--", then the program's arguments
// after it. With nothing before "--", the first argument after it is the
// FILE (a file name that starts with "-").
func filesAndArgs(pos, rest []string) (files, args []string, err error) {
	if len(pos) == 0 && len(rest) > 0 {
		pos, rest = rest[:1], rest[1:]
	}
	if len(pos) == 0 {
		return nil, nil, errors.New("missing FILE (or - to read the code from stdin)")
	}
	return pos, rest, nil
}

// listFlag is a flag given any number of times, each value kept in order
// (--compiler-flag -O0 --compiler-flag -DX=3).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, " ") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// envFlag is --env NAME=VALUE, given any number of times; a NAME given
// twice is refused rather than one value silently winning.
type envFlag map[string]string

func (e envFlag) String() string { return "" }

func (e envFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	switch {
	case !ok:
		return fmt.Errorf("%q is not NAME=VALUE", v)
	case name == "":
		return fmt.Errorf("%q has an empty NAME", v)
	}
	if _, dup := e[name]; dup {
		return fmt.Errorf("%s is given twice", name)
	}
	e[name] = value
	return nil
}

// programFlags are the flags run and judge share for what a request adds
// to its code.
type programFlags struct {
	compilerFlags listFlag
	env           envFlag
}

// add defines --compiler-flag and --env on fs.
func (p *programFlags) add(fs *flag.FlagSet) {
	p.env = envFlag{}
	fs.Var(&p.compilerFlags, "compiler-flag", "add `FLAG` to the compile step of a compiled language, its value attached "+
		"(-O0, -std=c99, -DX=3, -Wall, --release=17); repeatable; only flags of the language's allow-list "+
		"(coderunner langs --json) are accepted, and none that names a file or a program")
	fs.Var(p.env, "env", "set `NAME=VALUE` in the program's environment; repeatable; NAME matches ^[A-Z_][A-Z0-9_]*$, and PATH, "+
		"HOME, TMPDIR, LANG, LC_ALL, LD_*, CODERUNNER_*, the language's own variables and the server's are refused")
}

// envMap is the --env variables, or nil when none was given.
func (p *programFlags) envMap() map[string]string {
	if len(p.env) == 0 {
		return nil
	}
	return map[string]string(p.env)
}

// wantsValue reports whether arg is a flag that takes the next argument as
// its value.
func wantsValue(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if !strings.HasPrefix(arg, "-") || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}
