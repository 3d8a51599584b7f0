package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/coderunner/coderunner/lang"
)

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
	infos := t.Describe(ctx)
	if c.json {
		if err := writeJSON(a.Stdout, infos); err != nil {
			return ExitFailure
		}
		return ExitOK
	}
	writeLangs(a, infos)
	return ExitOK
}

func writeLangs(a *App, infos []lang.Info) {
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
