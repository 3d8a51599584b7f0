package lang

import (
	"context"
	"slices"
	"sync"
)

// Info is one language as the front ends list it: `coderunner langs
// --json`, doctor's report and MCP's list_languages all print this JSON.
type Info struct {
	ID         string   `json:"id"`
	Aliases    []string `json:"aliases"`
	Extensions []string `json:"extensions"`
	Compiled   bool     `json:"compiled"`
	Available  bool     `json:"available"`
	Version    string   `json:"version,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	// CompilerFlags is the allow-list of a request's compiler flags:
	// regular expressions a whole flag must match.
	CompilerFlags []string `json:"compiler_flags,omitempty"`
}

// Describe lists the table's languages in its order (All), each with what
// Discover found of its toolchain. The languages are discovered
// concurrently, since each may run a version command. Aliases and
// Extensions are the caller's own copies, never nil, so that JSON shows an
// empty list as [].
func (t *Table) Describe(ctx context.Context) []Info {
	all := t.All()
	out := make([]Info, len(all))
	var wg sync.WaitGroup
	for i, l := range all {
		wg.Go(func() {
			tc := l.Discover(ctx)
			out[i] = Info{
				ID:            l.ID,
				Aliases:       nonNil(slices.Clone(l.Aliases)),
				Extensions:    nonNil(slices.Clone(l.Extensions)),
				Compiled:      l.Compiled,
				Available:     tc.Available,
				Version:       tc.Version,
				Reason:        tc.Reason,
				CompilerFlags: l.CompilerFlagRules(),
			}
		})
	}
	wg.Wait()
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
