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
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first positional argument, or after a "--"
		// that it drops; only the consumed arguments tell which.
		consumed := args[:len(args)-len(rest)]
		if n := len(consumed); n > 0 && consumed[n-1] == "--" && (n < 2 || !wantsValue(fs, consumed[n-2])) {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
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
