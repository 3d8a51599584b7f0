package judge

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// streamModes are every comparison mode, the streaming ones and the one
// that falls back to holding the output.
var streamModes = []string{"exact", "normalized", "tokens", "float:0", "float:1e-6", "float:0.5"}

// streamCases are outputs and expected outputs on which each mode's
// Matcher must agree with its Comparator. They cover what a stream cuts
// badly: whitespace and line ends held back, runes split across writes,
// tokens and numbers that span writes, and outputs longer or shorter than
// expected.
var streamCases = [][2]string{
	{"", ""},
	{"", "\n \t"},
	{"\n\n", ""},
	{"0 1\n", "0 1"},
	{"0 1   \r\n\r\n", "0 1"},
	{"0  1\n", "0 1"},
	{" 0 1", "0 1"},
	{"a\n\nb", "a\nb"},
	{"a\n\nb", "a\n\nb"},
	{"\n\na", "\n\na"},
	{"  \na", "\na"},
	{"a \t b", "a \t b"},
	{"a \t b", "a \t  b"},
	{"a \t b", "a \t\tb"},
	{"a  \n  b", "a\n  b"},
	{"a\r\nb\r\n", "a\nb"},
	{"a\rb", "a\rb"},
	{"a\rb", "a b"},
	{"a\x0b\x0c", "a"},
	{"a\u00a0", "a\u00a0"},
	{"a\u00a0", "a"},
	{"a\u00a0b", "a b"},
	{"a\u2028b\u3000c", "a b c"},
	{"a\u0085b", "a b"},
	{"\xe2\x80", "\xe2\x80"},
	{"\xe2\x80 x", "\xe2\x80 x"},
	{"\xe2\x80\xa8", " "},
	{"\xff\xfe", "\xff\xfe"},
	{"\xe2\x80\xa8x", "x"},
	{"x\xe2\x80", "x\xe2"},
	{"é ü", "é ü"},
	{"é ü", "é u"},
	{" 0\t\t1\n\n2 ", "0 1 2"},
	{"0 1", "0 1 2"},
	{"0 1 2", "0 1"},
	{"01", "0 1"},
	{"0 1", "01"},
	{"1.0000001", "1"},
	{"1.00001", "1"},
	{"1000000.5", "1000000"},
	{"-0.0000005", "0"},
	{"1e-3 x", "0.001 x"},
	{"1 x", "1 y"},
	{"1 2", "1"},
	{"nan", "nan"},
	{"NaN", "nan"},
	{"inf", "inf"},
	{"1e400", "1e401"},
	{"0.1", "0.10"},
	{"0.1", "0.1000001"},
	{"1.4", "1"},
	{"1.6", "1"},
	{"150", "100"},
	{"0x1p-2", "0.25"},
	{"1_000", "1000"},
	{"1.5 2\n", "1.50 2.0"},
	{"3\n", "3\n"},
	{"3\n", "3"},
	{"3", "3\n"},
	{"3\n\n", "3\n"},
	{"abc", "ab"},
	{"ab", "abc"},
	{strings.Repeat("x", 70000), strings.Repeat("x", 70000)},
	{strings.Repeat("x", 70000), strings.Repeat("x", 69999)},
	{strings.Repeat("x", 70000) + "y", strings.Repeat("x", 70000) + "z"},
	{"1." + strings.Repeat("0", 1000), "1"},
	{strings.Repeat(" ", 5000) + "a", strings.Repeat(" ", 5000) + "a"},
	{strings.Repeat(" ", 5000) + "a", strings.Repeat(" ", 4999) + "a"},
	{strings.Repeat("\n", 5000) + "a", strings.Repeat("\n", 5000) + "a"},
	{"a" + strings.Repeat("\n", 5000), "a"},
	{"a" + strings.Repeat(" \n", 5000) + "b", "a" + strings.Repeat("\n", 5000) + "b"},
}

// feed writes s to m in pieces: whole, byte by byte, or cut at random.
func feed(m Matcher, s string, how int, rng *rand.Rand) {
	switch how {
	case 0:
		_, _ = m.Write([]byte(s))
	case 1:
		for i := range len(s) {
			_, _ = m.Write([]byte{s[i]})
		}
	default:
		for len(s) > 0 {
			n := min(len(s), 1+rng.IntN(7))
			_, _ = m.Write([]byte(s[:n]))
			s = s[n:]
		}
	}
}

func TestMatcherAgreesWithCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mode := range streamModes {
		c, err := ParseCompare(mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range streamCases {
			for _, pair := range [][2]string{tc, {tc[1], tc[0]}} {
				want := c.Match(pair[0], pair[1])
				for how := range 3 {
					m := NewMatcher(c, pair[1])
					feed(m, pair[0], how, rng)
					if got := m.Match(); got != want {
						t.Errorf("%s: streamed %q against %q (pieces %d) = %v, Match = %v",
							mode, short(pair[0]), short(pair[1]), how, got, want)
					}
				}
			}
		}
	}
}

// TestMatcherVerdicts pins the verdicts of a few cases, so that the
// agreement above is not an agreement on a wrong answer.
func TestMatcherVerdicts(t *testing.T) {
	tests := []struct {
		mode, actual, expected string
		want                   bool
	}{
		{"normalized", "0 1   \r\n\r\n", "0 1", true},
		{"normalized", "a \t b", "a \t  b", false},
		{"exact", "3\n", "3", false},
		{"tokens", "a\u00a0b", "a b", true},
		{"tokens", "\xe2\x80", "\xe2\x80", true},
		{"float:1e-6", "1.0000001 x", "1 x", true},
		{"float:1e-6", "1." + strings.Repeat("0", 1000), "1", true},
	}
	for _, tt := range tests {
		c, _ := ParseCompare(tt.mode)
		m := NewMatcher(c, tt.expected)
		feed(m, tt.actual, 1, nil)
		if got := m.Match(); got != tt.want {
			t.Errorf("%s: %q against %q = %v, want %v", tt.mode, short(tt.actual), short(tt.expected), got, tt.want)
		}
	}
}

// A number longer than MaxFloatTokenBytes is compared as text: the one
// documented difference from the float Comparator.
func TestMatcherLongFloatToken(t *testing.T) {
	c, _ := ParseCompare("float:1e-6")
	long := "1." + strings.Repeat("0", MaxFloatTokenBytes)
	if !c.Match(long, "1") {
		t.Fatal("the float comparator should accept a long spelling of 1")
	}
	m := NewMatcher(c, "1")
	feed(m, long, 0, nil)
	if m.Match() {
		t.Error("a number longer than MaxFloatTokenBytes matched a different spelling")
	}
	m = NewMatcher(c, long)
	feed(m, long, 0, nil)
	if !m.Match() {
		t.Error("a long token did not match itself")
	}
}

// foreignComparator is a Comparator from outside the package: it is judged
// on the held output.
type foreignComparator struct{}

func (foreignComparator) Match(a, e string) bool { return strings.EqualFold(a, e) }
func (foreignComparator) String() string         { return "fold" }

func TestMatcherForeignComparator(t *testing.T) {
	m := NewMatcher(foreignComparator{}, "HeLLo")
	feed(m, "hello", 1, nil)
	if !m.Match() {
		t.Error("a foreign comparator's verdict was not given")
	}
}

func TestNormalizeLean(t *testing.T) {
	for _, tc := range streamCases {
		for _, s := range tc {
			if got, want := normalizeLean(s), Normalize(s); got != want {
				t.Errorf("normalizeLean(%q) = %q, want %q", short(s), short(got), short(want))
			}
		}
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// FuzzMatcher checks every mode's Matcher against its Comparator on any
// output, expected output and cutting of the output into writes.
func FuzzMatcher(f *testing.F) {
	for _, tc := range streamCases {
		if len(tc[0]) < 100 && len(tc[1]) < 100 {
			f.Add(tc[0], tc[1], uint64(7))
		}
	}
	cmps := make([]Comparator, len(streamModes))
	for i, mode := range streamModes {
		cmps[i], _ = ParseCompare(mode)
	}
	f.Fuzz(func(t *testing.T, a, e string, seed uint64) {
		if normalizeLean(e) != Normalize(e) {
			t.Errorf("normalizeLean(%q) = %q, want %q", e, normalizeLean(e), Normalize(e))
		}
		rng := rand.New(rand.NewPCG(seed, seed>>32))
		for _, c := range cmps {
			want := c.Match(a, e)
			if len(a) > MaxFloatTokenBytes {
				continue // a long number is compared as text (see above)
			}
			for how := range 3 {
				m := NewMatcher(c, e)
				feed(m, a, how, rng)
				if got := m.Match(); got != want {
					t.Errorf("%s: streamed %q against %q (pieces %d) = %v, Match = %v", c, a, e, how, got, want)
				}
			}
		}
	})
}

// BenchmarkMatcher is the cost of judging 1 MiB of output in 64 KiB
// writes (the capture's reads), per mode, next to the Comparator on the
// whole output.
func BenchmarkMatcher(b *testing.B) {
	out := strings.Repeat("12 3.5 abc\n", 1<<20/11)
	for _, mode := range streamModes {
		c, _ := ParseCompare(mode)
		b.Run(mode+"/stream", func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				m := NewMatcher(c, out)
				for s := out; len(s) > 0; {
					n := min(len(s), 64<<10)
					_, _ = m.Write([]byte(s[:n]))
					s = s[n:]
				}
				if !m.Match() {
					b.Fatal("no match")
				}
			}
		})
		b.Run(mode+"/whole", func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				if !c.Match(out, out) {
					b.Fatal("no match")
				}
			}
		})
	}
}
