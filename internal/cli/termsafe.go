package cli

import (
	"io"
	"unicode/utf8"
)

// termSafe writes a program's output to a terminal with its control
// characters made visible, so that a program cannot drive the caller's
// terminal: no escape sequences (colours, cursor moves, window titles,
// OSC 52 clipboard writes, hyperlinks, queries whose answers the terminal
// types back as input), no C1 controls, no bidirectional overrides.
//
// Kept as they are: printable text (valid UTF-8), newline, tab and
// carriage return, so that lines, columns and progress bars still work;
// a carriage return can only rewrite the current line from its start.
// Shown as escapes: the other C0 controls and DEL as \xNN (ESC is \x1b),
// the C1 controls (U+0080 to U+009F) and the bidirectional embeddings,
// overrides and isolates (U+202A to U+202E, U+2066 to U+2069) as \uNNNN,
// and bytes that are not UTF-8 as \xNN. A UTF-8 sequence split across
// writes is held until it is whole; Flush writes what is left.
type termSafe struct {
	w       io.Writer
	pending []byte
	buf     []byte
}

const hexDigits = "0123456789abcdef"

func (t *termSafe) Write(p []byte) (int, error) {
	data := p
	if len(t.pending) > 0 {
		data = append(t.pending, p...)
		t.pending = nil
	}
	out := t.buf[:0]
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f || c == '\n' || c == '\t' || c == '\r' {
				out = append(out, c)
			} else {
				out = append(out, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		if !utf8.FullRune(data[i:]) {
			t.pending = append([]byte(nil), data[i:]...)
			break
		}
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			out = append(out, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	t.buf = out[:0]
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes of an unfinished UTF-8 sequence, as escapes.
func (t *termSafe) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	out := make([]byte, 0, 4*len(t.pending))
	for _, c := range t.pending {
		out = append(out, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
	}
	t.pending = nil
	_, err := t.w.Write(out)
	return err
}

// sanitizeTerminals makes a.Stdout and a.Stderr termSafe where they are
// terminals, until the function it returns restores them.
func (a *App) sanitizeTerminals() (restore func()) {
	stdout, stderr := a.Stdout, a.Stderr
	var safe []*termSafe
	if isTerminal(stdout) {
		t := &termSafe{w: stdout}
		safe = append(safe, t)
		a.Stdout = t
	}
	if isTerminal(stderr) {
		t := &termSafe{w: stderr}
		safe = append(safe, t)
		a.Stderr = t
	}
	return func() {
		for _, t := range safe {
			_ = t.Flush()
		}
		a.Stdout, a.Stderr = stdout, stderr
	}
}
