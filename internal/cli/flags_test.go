package cli

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration // 0 for an error
	}{
		{"30s", 30 * time.Second},
		{"1500ms", 1500 * time.Millisecond},
		{"2m", 2 * time.Minute},
		{"1m30s", 90 * time.Second},
		{"30", 30 * time.Second},
		{" 7 ", 7 * time.Second},
		{"2.5", 2500 * time.Millisecond},
		{"0.001", time.Millisecond},
		{"", 0},
		{"0", 0},
		{"0s", 0},
		{"-1", 0},
		{"-5s", 0},
		{"abc", 0},
		{"30 s", 0},
		{"NaN", 0},
		{"Inf", 0},
		{"1e300", 0},
	}
	for _, tt := range tests {
		got, err := parseTimeout(tt.in)
		if tt.want == 0 {
			if err == nil {
				t.Errorf("parseTimeout(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"30s", "1500ms", "2.5", "-1", "1e9", "9223372036s", "0x10", "1h2m3s4ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseTimeout(s)
		if err == nil && d <= 0 {
			t.Errorf("parseTimeout(%q) = %v without an error", s, d)
		}
	})
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args []string
		pos  []string
		lang string
		json bool
	}{
		{[]string{"main.py"}, []string{"main.py"}, "", false},
		{[]string{"--lang", "py", "-"}, []string{"-"}, "py", false},
		{[]string{"-", "--lang", "py"}, []string{"-"}, "py", false},
		{[]string{"a", "--json", "b"}, []string{"a", "b"}, "", true},
		{[]string{"--json", "--", "--lang", "x"}, []string{"--lang", "x"}, "", true},
		{[]string{"--lang", "--", "f"}, []string{"f"}, "--", false},
		{[]string{"f", "--", "-"}, []string{"f", "-"}, "", false},
		{nil, nil, "", false},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		lang := fs.String("lang", "", "")
		js := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, tt.args)
		if err != nil {
			t.Errorf("parseArgs(%q): %v", tt.args, err)
			continue
		}
		if !slices.Equal(pos, tt.pos) || *lang != tt.lang || *js != tt.json {
			t.Errorf("parseArgs(%q) = %q lang=%q json=%v; want %q lang=%q json=%v", tt.args, pos, *lang, *js, tt.pos, tt.lang, tt.json)
		}
	}
}

func TestDashes(t *testing.T) {
	tests := map[string]string{
		`invalid value "x" for flag -memory: parse error`: `invalid value "x" for flag --memory: parse error`,
		"flag provided but not defined: -nope":            "flag provided but not defined: --nope",
		"flag needs an argument: -lang":                   "flag needs an argument: --lang",
		`invalid boolean value "x" for -json: bad`:        `invalid boolean value "x" for --json: bad`,
		"value -3 is negative":                            "value -3 is negative",
	}
	for in, want := range tests {
		if got := dashes(in); got != want {
			t.Errorf("dashes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadBounded(t *testing.T) {
	if b, err := readBounded(strings.NewReader("abc"), 3, "x"); err != nil || string(b) != "abc" {
		t.Errorf("at the bound: %q %v", b, err)
	}
	if _, err := readBounded(strings.NewReader("abcd"), 3, "the input"); err == nil || !strings.Contains(err.Error(), "the input") {
		t.Errorf("over the bound: %v", err)
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("--lang\x00py\x00-")
	f.Add("a\x00--\x00--json")
	f.Add("--json=false\x00x\x00--lang=--")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("lang", "", "")
		fs.Bool("json", false, "")
		pos, err := parseArgs(fs, args)
		if err != nil {
			return
		}
		// Every positional argument comes from the input, in order.
		i := 0
		for _, p := range pos {
			for i < len(args) && args[i] != p {
				i++
			}
			if i == len(args) {
				t.Fatalf("parseArgs(%q) = %q: %q is not an argument in order", args, pos, p)
			}
			i++
		}
	})
}
