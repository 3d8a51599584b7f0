package judge

import (
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Matcher judges one output against an expected output as the output is
// produced: the output is written to it in pieces of any size, and Match
// gives the verdict of its Comparator on the whole. It keeps none of the
// output, only a fixed amount of state (and, in a float mode, the current
// token up to MaxFloatTokenBytes), so a run's output need not be held in
// memory to be judged. A Matcher is safe for concurrent use; its Write never
// fails.
type Matcher interface {
	io.Writer
	// Match reports whether everything written so far is an accepted
	// answer. It may be called once, after the last Write.
	Match() bool
}

// MaxFloatTokenBytes is how much of one output token a float mode holds to
// parse it as a number. A longer token (a number written with more than
// 64 KiB of digits) is compared as text only: it matches only a
// byte-identical expected token.
const MaxFloatTokenBytes = 64 << 10

// NewMatcher returns a Matcher that gives c's verdict on an output against
// expected. The four modes of ParseCompare stream; any other Comparator is
// given the whole output, held in memory, when Match is called.
func NewMatcher(c Comparator, expected string) Matcher {
	var m matcher
	switch c := c.(type) {
	case exactComparator:
		m = &exactMatcher{exp: expected}
	case normalizedComparator:
		m = &normMatcher{exp: normalizeLean(expected)}
	case tokensComparator:
		m = &tokenMatcher{exp: expected}
	case floatComparator:
		m = &tokenMatcher{exp: expected, float: &c}
	default:
		m = &heldMatcher{c: c, exp: expected}
	}
	return &lockedMatcher{m: m}
}

// matcher is what each mode implements; lockedMatcher adds the lock.
type matcher interface {
	write(p []byte)
	match() bool
}

// lockedMatcher makes a matcher safe for concurrent use: a backend's reading
// goroutine may still be writing when the run is given up.
type lockedMatcher struct {
	mu sync.Mutex
	m  matcher
}

func (l *lockedMatcher) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.m.write(p)
	l.mu.Unlock()
	return len(p), nil
}

func (l *lockedMatcher) Match() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.match()
}

// exactMatcher: byte equality, compared as the bytes arrive.
type exactMatcher struct {
	exp string
	n   int
	bad bool
}

func (m *exactMatcher) write(p []byte) {
	if m.bad {
		return
	}
	if len(p) > len(m.exp)-m.n || m.exp[m.n:m.n+len(p)] != string(p) {
		m.bad = true
		return
	}
	m.n += len(p)
}

func (m *exactMatcher) match() bool { return !m.bad && m.n == len(m.exp) }

// normMatcher is the normalized mode. The output goes through the same
// transformation as Normalize, applied as it arrives, and what comes out is
// compared with the normalized expected output. Whitespace at the end of a
// line and line ends are held back as counts until something printable
// follows them (then they are part of the output) or the line or output
// ends (then they are dropped). A run of held whitespace is checked against
// the expected output as it arrives, so that it need not be kept.
type normMatcher struct {
	exp  string // Normalize(expected)
	p    int    // bytes of exp matched by what the output has settled
	nl   int    // line ends held back
	ws   int    // whitespace held back at the end of the current line
	wsOK bool   // the held whitespace equals exp[p+nl : p+nl+ws]
	bad  bool
}

// isTrailingSpace is Normalize's set of trailing whitespace.
func isTrailingSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\r' || b == '\v' || b == '\f'
}

// normSpecial marks the bytes the normalized mode treats apart: line ends
// and trailing whitespace.
var normSpecial = [256]bool{'\n': true, ' ': true, '\t': true, '\r': true, '\v': true, '\f': true}

func (m *normMatcher) write(p []byte) {
	for i := 0; i < len(p); i++ {
		if m.bad {
			return
		}
		b := p[i]
		if !normSpecial[b] {
			// A run of ordinary bytes, compared at once.
			j := i + 1
			for j < len(p) && !normSpecial[p[j]] {
				j++
			}
			m.settle()
			if m.bad || j-i > len(m.exp)-m.p || m.exp[m.p:m.p+j-i] != string(p[i:j]) {
				m.bad = true
				return
			}
			m.p += j - i
			i = j - 1
			continue
		}
		switch {
		case b == '\n':
			m.nl++
			m.ws = 0
		case isTrailingSpace(b):
			if m.ws == 0 {
				m.wsOK = true
			}
			if at := m.p + m.nl + m.ws; at >= len(m.exp) || m.exp[at] != b {
				m.wsOK = false
			}
			m.ws++
		}
	}
}

// settle makes the held line ends and whitespace part of the output, as
// something printable follows them.
func (m *normMatcher) settle() {
	if m.nl > 0 {
		if m.nl > len(m.exp)-m.p {
			m.bad = true
			return
		}
		for _, c := range []byte(m.exp[m.p : m.p+m.nl]) {
			if c != '\n' {
				m.bad = true
				return
			}
		}
		m.p += m.nl
		m.nl = 0
	}
	if m.ws > 0 {
		if !m.wsOK {
			m.bad = true
			return
		}
		m.p += m.ws
		m.ws = 0
	}
}

func (m *normMatcher) match() bool { return !m.bad && m.p == len(m.exp) }

// normalizeLean is Normalize without a slice of lines: one pass, one
// allocation of at most len(s) bytes. The output is the trimmed lines up to
// the last that is not empty, joined by "\n": before line i, written when
// it is not empty, go i-last line ends, last being the line written before
// it (or 0).
func normalizeLean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i, rest := 0, s; ; i++ {
		line, next, more := strings.Cut(rest, "\n")
		if line = strings.TrimRight(line, " \t\r\v\f"); line != "" {
			for range i - last {
				b.WriteByte('\n')
			}
			b.WriteString(line)
			last = i
		}
		if !more {
			return b.String()
		}
		rest = next
	}
}

// tokenMatcher is the tokens mode, and with float set a float mode. The
// output is cut into tokens at Unicode whitespace, as strings.Fields cuts
// it (decoding UTF-8 across the pieces written), and each token is compared
// with the expected output's next token as it arrives. A float mode holds
// the current token (up to MaxFloatTokenBytes) to parse it as a number when
// it is not textually equal.
type tokenMatcher struct {
	exp   string
	float *floatComparator

	pend [utf8.UTFMax]byte // the start of a rune split across writes
	np   int

	e       int  // position in exp: the end of its last token compared
	in      bool // inside an output token
	etStart int  // start of the expected token being compared
	k       int  // bytes of the current output token
	eq      bool // the output token so far equals exp[etStart:etStart+k]
	tok     []byte
	long    bool // the token passed MaxFloatTokenBytes: not kept
	bad     bool
}

func (m *tokenMatcher) write(p []byte) {
	if m.bad {
		return
	}
	if m.np > 0 {
		// Complete the rune split across writes with the first bytes of p.
		var buf [2 * utf8.UTFMax]byte
		n := copy(buf[:], m.pend[:m.np])
		n += copy(buf[n:], p[:min(len(p), utf8.UTFMax)])
		used := m.scan(buf[:n], false)
		if used < m.np {
			// Still not a whole rune: p was shorter than what it needs.
			m.np = copy(m.pend[:], buf[used:n])
			return
		}
		p = p[used-m.np:]
		m.np = 0
	}
	used := m.scan(p, false)
	m.np = copy(m.pend[:], p[used:])
}

// scan handles the runes of p and returns how many bytes it used: all of p
// at the end of the output, else up to the start of a rune that p cuts.
func (m *tokenMatcher) scan(p []byte, eof bool) int {
	i, start := 0, -1 // start: where the token's bytes in p begin
	for i < len(p) && !m.bad {
		c := p[i]
		size := 1
		space := false
		if c < utf8.RuneSelf {
			space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
		} else {
			if !eof && !utf8.FullRune(p[i:]) {
				break
			}
			var r rune
			r, size = utf8.DecodeRune(p[i:])
			space = unicode.IsSpace(r)
		}
		switch {
		case space:
			if start >= 0 {
				m.tokenBytes(p[start:i])
				start = -1
			}
			if m.in {
				m.endToken()
			}
		case start < 0:
			if !m.in {
				m.startToken()
			}
			start = i
		}
		i += size
	}
	if start >= 0 && !m.bad {
		m.tokenBytes(p[start:i])
	}
	return i
}

// startToken finds the expected token the output's new token is compared
// with.
func (m *tokenMatcher) startToken() {
	m.e = skipSpace(m.exp, m.e)
	if m.e == len(m.exp) {
		m.bad = true // the output has more tokens
		return
	}
	m.in, m.etStart, m.k, m.eq, m.long = true, m.e, 0, true, false
	m.tok = m.tok[:0]
}

func (m *tokenMatcher) tokenBytes(b []byte) {
	if m.bad || len(b) == 0 {
		return
	}
	if m.eq {
		at := m.etStart + m.k
		if len(b) > len(m.exp)-at || m.exp[at:at+len(b)] != string(b) {
			m.eq = false
		}
	}
	m.k += len(b)
	if m.float == nil {
		if !m.eq {
			m.bad = true
		}
		return
	}
	if !m.long {
		if m.k > MaxFloatTokenBytes {
			m.long, m.tok = true, nil
		} else {
			m.tok = append(m.tok, b...)
		}
	}
	if m.long && !m.eq {
		m.bad = true
	}
}

func (m *tokenMatcher) endToken() {
	if m.bad {
		return
	}
	m.in = false
	end := tokenEnd(m.exp, m.etStart)
	m.e = end
	if m.eq && m.etStart+m.k == end {
		return
	}
	if m.float == nil || m.long || !m.float.tokenMatch(string(m.tok), m.exp[m.etStart:end]) {
		m.bad = true
	}
}

func (m *tokenMatcher) match() bool {
	if m.bad {
		return false
	}
	if m.np > 0 {
		m.scan(m.pend[:m.np], true)
		m.np = 0
	}
	if m.in {
		m.endToken()
	}
	return !m.bad && skipSpace(m.exp, m.e) == len(m.exp)
}

// skipSpace returns the position of the first rune of s at or after i that
// is not whitespace, or len(s).
func skipSpace(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// tokenEnd returns the end of the token of s that starts at i.
func tokenEnd(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// heldMatcher is the fallback for a Comparator that cannot stream.
type heldMatcher struct {
	c   Comparator
	exp string
	buf []byte
}

func (m *heldMatcher) write(p []byte) { m.buf = append(m.buf, p...) }

func (m *heldMatcher) match() bool { return m.c.Match(string(m.buf), m.exp) }
