package judge

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Comparator decides whether a program's output matches the expected one.
type Comparator interface {
	// Match reports whether actual is an accepted answer for expected.
	Match(actual, expected string) bool
	// String is the mode as ParseCompare accepts it.
	String() string
}

// Compare modes accepted by ParseCompare. A float mode is written
// "float:EPS", for example "float:1e-6".
const (
	CompareNormalized = "normalized"
	CompareExact      = "exact"
	CompareTokens     = "tokens"
	CompareFloat      = "float"
)

// DefaultFloatEpsilon is the tolerance of a bare "float" mode.
const DefaultFloatEpsilon = 1e-6

// ParseCompare returns the comparator for a mode: "" or "normalized"
// (trailing whitespace of each line and trailing empty lines ignored),
// "exact" (byte equality), "tokens" (whitespace-separated tokens equal) or
// "float:EPS" (tokens, numbers equal within absolute or relative EPS; a bare
// "float" uses DefaultFloatEpsilon). Mode names are lower case.
func ParseCompare(mode string) (Comparator, error) {
	switch mode {
	case "", CompareNormalized:
		return normalizedComparator{}, nil
	case CompareExact:
		return exactComparator{}, nil
	case CompareTokens:
		return tokensComparator{}, nil
	case CompareFloat:
		return floatComparator{eps: DefaultFloatEpsilon}, nil
	}
	rest, ok := strings.CutPrefix(mode, CompareFloat+":")
	if !ok {
		return nil, fmt.Errorf("unknown compare mode %q (want normalized, exact, tokens or float:EPS)", mode)
	}
	eps, err := strconv.ParseFloat(rest, 64)
	if err != nil || math.IsNaN(eps) || math.IsInf(eps, 0) || eps < 0 {
		return nil, fmt.Errorf("compare mode %q: EPS must be a finite number >= 0", mode)
	}
	return floatComparator{eps: eps}, nil
}

// Normalize is the normalized mode's view of an output: every line loses
// its trailing whitespace (spaces, tabs, CR, VT, FF) and trailing empty
// lines are dropped. Lines are separated by "\n", so "\r\n" endings
// normalise like "\n".
func Normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r\v\f")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

type normalizedComparator struct{}

func (normalizedComparator) Match(actual, expected string) bool {
	return Normalize(actual) == Normalize(expected)
}

func (normalizedComparator) String() string { return CompareNormalized }

type exactComparator struct{}

func (exactComparator) Match(actual, expected string) bool { return actual == expected }

func (exactComparator) String() string { return CompareExact }

type tokensComparator struct{}

func (tokensComparator) Match(actual, expected string) bool {
	a, e := strings.Fields(actual), strings.Fields(expected)
	if len(a) != len(e) {
		return false
	}
	for i := range a {
		if a[i] != e[i] {
			return false
		}
	}
	return true
}

func (tokensComparator) String() string { return CompareTokens }

type floatComparator struct{ eps float64 }

func (c floatComparator) Match(actual, expected string) bool {
	a, e := strings.Fields(actual), strings.Fields(expected)
	if len(a) != len(e) {
		return false
	}
	for i := range a {
		if !c.tokenMatch(a[i], e[i]) {
			return false
		}
	}
	return true
}

// tokenMatch compares two tokens numerically when both are finite numbers
// and textually otherwise, so "nan" and "inf" must be spelt as expected.
func (c floatComparator) tokenMatch(a, e string) bool {
	if a == e {
		return true
	}
	av, aok := parseFinite(a)
	ev, eok := parseFinite(e)
	if !aok || !eok {
		return false
	}
	d := math.Abs(av - ev)
	return d <= c.eps || d <= c.eps*math.Abs(ev)
}

func (c floatComparator) String() string {
	return CompareFloat + ":" + strconv.FormatFloat(c.eps, 'g', -1, 64)
}

func parseFinite(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}
