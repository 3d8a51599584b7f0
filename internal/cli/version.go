package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionInfo is what version prints.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

// buildInfo fills what -ldflags did not set from the module and VCS
// information the Go toolchain embeds.
func buildInfo(version, commit string, info *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: version, Commit: commit, Go: runtime.Version()}
	if ok {
		if v.Version == "" && info.Main.Version != "" {
			v.Version = info.Main.Version
		}
		if v.Commit == "" {
			var rev, modified string
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			v.Commit = rev
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

func (a *App) versionCmd(_ context.Context, args []string) int {
	fs, c := a.flagSet("version", "", "Print the version and commit of coderunner.", false)
	pos, code, done := a.parse(fs, c, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return a.fail("version", "unexpected argument %q", pos[0])
	}
	info, ok := debug.ReadBuildInfo()
	v := buildInfo(a.Version, a.Commit, info, ok)
	if c.json {
		if err := writeJSON(a.Stdout, v); err != nil {
			return ExitFailure
		}
		return ExitOK
	}
	fmt.Fprintf(a.Stdout, "coderunner %s (commit %s, %s)\n", v.Version, v.Commit, v.Go)
	return ExitOK
}
