package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/coderunner/coderunner/lang"
)

// langInfo is one language as langs and doctor show it.
type langInfo struct {
	ID         string   `json:"id"`
	Aliases    []string `json:"aliases"`
	Extensions []string `json:"extensions"`
	Compiled   bool     `json:"compiled"`
	Available  bool     `json:"available"`
	Version    string   `json:"version,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	// CompilerFlags is the allow-list of --compiler-flag: regular
	// expressions a whole flag must match.
	CompilerFlags []string `json:"compiler_flags,omitempty"`
}

// discoverAll finds every language's toolchain, concurrently since each
// may run a version command.
func discoverAll(ctx context.Context, t *lang.Table) []langInfo {
	all := t.All()
	out := make([]langInfo, len(all))
	var wg sync.WaitGroup
	for i, l := range all {
		wg.Go(func() {
			tc := l.Discover(ctx)
			out[i] = langInfo{
				ID:         l.ID,
				Aliases:    nonNil(l.Aliases),
				Extensions: nonNil(l.Extensions),
				Compiled:   l.Compiled,
				Available:  tc.Available,
				Version:    tc.Version,
				Reason:     tc.Reason,

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

func (a *App) langsCmd(ctx context.Context, args []string) int {
	fs, c := a.flagSet("langs", "", "List the languages, their aliases and extensions, and whether their toolchain is available here.", false)
	pos, code, done := a.parse(fs, c, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return a.fail("langs", "unexpected argument %q", pos[0])
	}
	cfg, _, err := a.setup(fs, c)
	if err != nil {
		return a.fail("langs", "%v", err)
	}
	t, err := cfg.LanguageTable()
	if err != nil {
		return a.fail("langs", "--config: %v", err)
	}
	infos := discoverAll(ctx, t)
	if c.json {
		if err := writeJSON(a.Stdout, infos); err != nil {
			return ExitFailure
		}
		return ExitOK
	}
	writeLangs(a, infos)
	return ExitOK
}

func writeLangs(a *App, infos []langInfo) {
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tALIASES\tEXTENSIONS\tCOMPILED\tAVAILABLE\tVERSION / WHY NOT")
	for _, l := range infos {
		avail, detail := "yes", l.Version
		if !l.Available {
			avail, detail = "no", l.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, orDash(strings.Join(l.Aliases, ",")),
			orDash(strings.Join(l.Extensions, ",")), yesNo(l.Compiled), avail, detail)
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
