package judge

import (
	"strings"
	"testing"
)

func TestParseCompare(t *testing.T) {
	tests := []struct {
		mode     string
		wantName string
		wantErr  bool
	}{
		{mode: "", wantName: "normalized"},
		{mode: "normalized", wantName: "normalized"},
		{mode: "exact", wantName: "exact"},
		{mode: "tokens", wantName: "tokens"},
		{mode: "float", wantName: "float:1e-06"},
		{mode: "float:0", wantName: "float:0"},
		{mode: "float:1e-9", wantName: "float:1e-09"},
		{mode: "float:0.5", wantName: "float:0.5"},
		{mode: "float:", wantErr: true},
		{mode: "float:-1", wantErr: true},
		{mode: "float:NaN", wantErr: true},
		{mode: "float:Inf", wantErr: true},
		{mode: "float:abc", wantErr: true},
		{mode: "FLOAT:1", wantErr: true},
		{mode: "Exact", wantErr: true},
		{mode: "exact ", wantErr: true},
		{mode: "regex", wantErr: true},
	}
	for _, tt := range tests {
		c, err := ParseCompare(tt.mode)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseCompare(%q) error = %v, want error %v", tt.mode, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if c.String() != tt.wantName {
			t.Errorf("ParseCompare(%q).String() = %q, want %q", tt.mode, c.String(), tt.wantName)
		}
		// The name is itself a mode that gives the same comparator.
		if again, err := ParseCompare(c.String()); err != nil || again.String() != c.String() {
			t.Errorf("ParseCompare(%q) does not round-trip: %v, %v", c.String(), again, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"\n\n\n", ""},
		{"a", "a"},
		{"a\n", "a"},
		{"a \t\r\n", "a"},
		{"a\r\nb\r\n", "a\nb"},
		{"a  \nb\t\n\n  \n", "a\nb"},
		{"\n\na", "\n\na"},
		{"  a", "  a"},
		{"a\n\nb", "a\n\nb"},
		{"a\x0b\x0c", "a"},
		{"a\u00a0", "a\u00a0"}, // only ASCII whitespace is trailing whitespace
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestComparators(t *testing.T) {
	tests := []struct {
		mode, actual, expected string
		want                   bool
	}{
		{"normalized", "0 1\n", "0 1", true},
		{"normalized", "0 1   \r\n\r\n", "0 1", true},
		{"normalized", "0  1\n", "0 1", false},
		{"normalized", " 0 1", "0 1", false},
		{"normalized", "a\n\nb", "a\nb", false},
		{"exact", "0 1\n", "0 1\n", true},
		{"exact", "0 1\n", "0 1", false},
		{"exact", "0 1\r\n", "0 1\n", false},
		{"exact", "", "", true},
		{"tokens", " 0\t\t1\n\n2 ", "0 1 2", true},
		{"tokens", "0 1", "0 1 2", false},
		{"tokens", "01", "0 1", false},
		{"tokens", "", "\n \t", true},
		{"float:1e-6", "1.0000001", "1", true},
		{"float:1e-6", "1.00001", "1", false},
		{"float:1e-6", "1000000.5", "1000000", true}, // relative
		{"float:1e-6", "-0.0000005", "0", true},      // absolute
		{"float:1e-6", "1e-3 x", "0.001 x", true},
		{"float:1e-6", "1 x", "1 y", false},
		{"float:1e-6", "1 2", "1", false},
		{"float:1e-6", "nan", "nan", true},
		{"float:1e-6", "NaN", "nan", false},
		{"float:1e-6", "inf", "inf", true},
		{"float:1e-6", "1e400", "1e401", false},
		{"float:0", "0.1", "0.10", true},
		{"float:0", "0.1", "0.1000001", false},
		{"float:0.5", "1.4", "1", true},
		{"float:0.5", "1.6", "1", false},
		{"float:0.5", "150", "100", true}, // |a-e| = 50 <= 0.5*100
	}
	for _, tt := range tests {
		c, err := ParseCompare(tt.mode)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Match(tt.actual, tt.expected); got != tt.want {
			t.Errorf("%s.Match(%q, %q) = %v, want %v", tt.mode, tt.actual, tt.expected, got, tt.want)
		}
	}
}

// respace rebuilds s with different whitespace between, before and after its
// tokens.
func respace(s string) string {
	return "\n\t" + strings.Join(strings.Fields(s), " \r\n\t ") + "  \n"
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "a", "a\n", "a \r\n\n", "\n\n", " x\ty \n z", "\r", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		n := Normalize(a)
		if Normalize(a+"  \n\n") != n {
			t.Errorf("Normalize(%q) != Normalize(%q + trailing whitespace)", a, a)
		}
		if Normalize(n) != n {
			t.Errorf("Normalize is not idempotent on %q", a)
		}
		if strings.HasSuffix(n, "\n") || strings.HasSuffix(n, " ") || strings.HasSuffix(n, "\t") || strings.HasSuffix(n, "\r") {
			t.Errorf("Normalize(%q) = %q ends in whitespace", a, n)
		}
		norm, _ := ParseCompare("normalized")
		if !norm.Match(a, a+" \t\r\n\n") || !norm.Match(strings.ReplaceAll(a, "\n", "\r\n"), a) && !strings.Contains(a, "\r") {
			t.Errorf("normalized does not ignore trailing whitespace of %q", a)
		}
	})
}

func FuzzCompare(f *testing.F) {
	f.Add("0 1\n", "0 1")
	f.Add("1.5 2", "1.50 2.0")
	f.Add("", " ")
	f.Add("nan inf", "nan inf")
	f.Fuzz(func(t *testing.T, a, b string) {
		exact, _ := ParseCompare("exact")
		tokens, _ := ParseCompare("tokens")
		norm, _ := ParseCompare("normalized")
		float0, _ := ParseCompare("float:0")
		float6, _ := ParseCompare("float:1e-6")

		if exact.Match(a, b) != (a == b) {
			t.Errorf("exact.Match(%q, %q) is not byte equality", a, b)
		}
		for _, c := range []Comparator{exact, tokens, norm, float0, float6} {
			if !c.Match(a, a) {
				t.Errorf("%s.Match(%q, itself) = false", c, a)
			}
		}
		if !tokens.Match(respace(a), a) || !float0.Match(respace(a), a) {
			t.Errorf("tokens/float do not ignore whitespace: %q vs %q", respace(a), a)
		}
		if tokens.Match(a, b) != tokens.Match(b, a) {
			t.Errorf("tokens is not symmetric on %q, %q", a, b)
		}
		// Each mode is at least as lenient as the one before it.
		if exact.Match(a, b) && !norm.Match(a, b) {
			t.Errorf("exact accepts %q, %q but normalized does not", a, b)
		}
		if norm.Match(a, b) && !tokens.Match(a, b) {
			t.Errorf("normalized accepts %q, %q but tokens does not", a, b)
		}
		if tokens.Match(a, b) && !float0.Match(a, b) {
			t.Errorf("tokens accepts %q, %q but float:0 does not", a, b)
		}
		if float0.Match(a, b) && !float6.Match(a, b) {
			t.Errorf("float:0 accepts %q, %q but float:1e-6 does not", a, b)
		}
	})
}
