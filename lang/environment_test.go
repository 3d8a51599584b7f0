package lang

import (
	"slices"
	"testing"
)

func TestEnvironment(t *testing.T) {
	tests := []struct {
		layers [][]string
		want   []string
	}{
		{nil, BaseEnvironment},
		{[][]string{{"PATH=/opt/go/bin:/usr/bin", "GOCACHE=/tmp/go", "bad", "=x"}},
			[]string{"PATH=/opt/go/bin:/usr/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "GOCACHE=/tmp/go"}},
		// A later layer replaces an earlier one's key in place.
		{[][]string{{"PATH=/opt/go/bin:/usr/bin", "GOCACHE=/tmp/gocache", "junk"}, {"GOCACHE=/workspace/.gocache", "GOPROXY=off"}},
			[]string{"PATH=/opt/go/bin:/usr/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
				"GOCACHE=/workspace/.gocache", "GOPROXY=off"}},
	}
	for _, tt := range tests {
		if got := Environment(tt.layers...); !slices.Equal(got, tt.want) {
			t.Errorf("Environment(%q) = %q, want %q", tt.layers, got, tt.want)
		}
	}
	if &Environment()[0] == &BaseEnvironment[0] {
		t.Error("Environment shares BaseEnvironment's array")
	}
}
