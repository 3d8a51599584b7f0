package lang

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestInfoJSON pins the JSON every front end prints of a language
// (langs --json, doctor, MCP list_languages): its names, their order, and
// what is left out when empty.
func TestInfoJSON(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{ID: "c", Aliases: []string{}, Extensions: []string{".c"}, Compiled: true, Reason: "gcc: not found"},
			`{"id":"c","aliases":[],"extensions":[".c"],"compiled":true,"available":false,"reason":"gcc: not found"}`},
		{Info{ID: "cpp", Aliases: []string{"c++"}, Extensions: []string{".cpp"}, Compiled: true, Available: true, Version: "g++ 12", CompilerFlags: []string{"-O[0-3]"}},
			`{"id":"cpp","aliases":["c++"],"extensions":[".cpp"],"compiled":true,"available":true,"version":"g++ 12","compiler_flags":["-O[0-3]"]}`},
	} {
		b, err := json.Marshal(tc.info)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s (%v), want %s", b, err, tc.want)
		}
	}
}

// TestDescribe: every language of the table, in its order, with what
// discovery found; empty lists are [] in JSON, and the lists are the
// caller's to change.
func TestDescribe(t *testing.T) {
	table := Default()
	infos := table.Describe(context.Background())
	all := table.All()
	if len(infos) != len(all) {
		t.Fatalf("%d languages described, the table has %d", len(infos), len(all))
	}
	for i, l := range all {
		in := infos[i]
		tc := l.Discover(context.Background())
		if in.ID != l.ID || in.Compiled != l.Compiled || in.Available != tc.Available || in.Version != tc.Version || in.Reason != tc.Reason ||
			!slices.Equal(in.Aliases, l.Aliases) || !slices.Equal(in.Extensions, l.Extensions) || !slices.Equal(in.CompilerFlags, l.CompilerFlagRules()) {
			t.Errorf("%s: %+v", l.ID, in)
		}
		if in.Aliases == nil || in.Extensions == nil {
			t.Errorf("%s: a nil list: %+v", l.ID, in)
		}
		if len(in.Aliases) > 0 {
			in.Aliases[0] = "changed"
			if l.Aliases[0] == "changed" {
				t.Errorf("%s: changing the described aliases changed the table's", l.ID)
			}
		}
	}
}
