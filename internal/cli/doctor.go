package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// backendInfo is one backend's probe as doctor shows it.
type backendInfo struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// RunsRefused says why every run is refused though the backend
	// works (no usable cgroup, and rlimits alone not allowed).
	RunsRefused string          `json:"runs_refused,omitempty"`
	Checks      []sandbox.Check `json:"checks"`
	Warnings    []string        `json:"warnings"`
}

// doctorReport is doctor's JSON.
type doctorReport struct {
	// Auto is the backend that --backend auto would take, or empty.
	Auto string `json:"auto"`
	// Config is where the configuration came from.
	Config    config.Source `json:"config"`
	Backends  []backendInfo `json:"backends"`
	Languages []lang.Info   `json:"languages"`
	// Container is what the container doctor runs in withheld; absent
	// outside a container.
	Container *containerReport `json:"container,omitempty"`
}

const doctorAbout = `Show what works on this machine: the configuration file loaded (and how it was
found), every sandbox backend's probe (namespaces, cgroup version and
controllers, seccomp, ...), which one --backend auto takes, and each
language's toolchain and version. Exits 1 when no backend works here.

In a container it also says what the runtime withheld that the sandboxes
need (a masked /proc, a seccomp profile or AppArmor profile that blocks
namespaces or mounts, user namespaces, a writable cgroup), with the docker
run setting that gives each back.`

func (a *App) doctorCmd(ctx context.Context, args []string) int {
	fs, c := a.flagSet("doctor", "", doctorAbout, false)
	pos, code, done := a.parse(fs, c, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return a.fail("doctor", "unexpected argument %q", pos[0])
	}
	cfg, log, err := a.setup(fs, c)
	if err != nil {
		return a.fail("doctor", "%v", err)
	}
	t, err := cfg.LanguageTable()
	if err != nil {
		return a.fail("doctor", "--config: %v", err)
	}

	rep := doctorReport{Config: c.source, Backends: probeAll(ctx, a.Registry, assembly.BackendOptions(cfg, log))}
	for _, name := range backend.Preference {
		i := slices.IndexFunc(rep.Backends, func(b backendInfo) bool { return b.Name == name })
		if i >= 0 && rep.Backends[i].Available {
			rep.Auto = name
			break
		}
	}
	rep.Languages = t.Describe(ctx)
	rep.Container = probeContainer(hostContainerEnv)

	status := ExitOK
	if rep.Auto == "" {
		status = ExitFailure
	}
	if c.json {
		if err := writeJSON(a.Stdout, rep); err != nil {
			return ExitFailure
		}
		return status
	}
	w := a.Stdout
	writeSource(w, rep.Config)
	fmt.Fprintln(w, "Backends:")
	for _, b := range rep.Backends {
		switch {
		case b.Available && b.RunsRefused != "":
			// The reason and the fixes are in the checks and warnings below.
			fmt.Fprintf(w, "  %s: available, but every run is refused (see below)\n", b.Name)
		case b.Available:
			fmt.Fprintf(w, "  %s: available\n", b.Name)
		default:
			fmt.Fprintf(w, "  %s: not available: %s\n", b.Name, b.Reason)
		}
		for _, ch := range b.Checks {
			mark := "ok  "
			if !ch.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "    [%s] %s: %s\n", mark, ch.Name, ch.Detail)
		}
		for _, warn := range b.Warnings {
			fmt.Fprintf(w, "    warning: %s\n", warn)
		}
	}
	writeContainer(w, rep.Container)
	if rep.Auto != "" {
		fmt.Fprintf(w, "--backend auto uses: %s\n", rep.Auto)
	} else {
		fmt.Fprintln(w, "--backend auto: no backend works here")
	}
	fmt.Fprintln(w, "\nLanguages:")
	writeLangs(a, rep.Languages)
	return status
}

// writeSource says which configuration file was loaded, and how it was
// found.
func writeSource(w io.Writer, src config.Source) {
	if src.File != "" {
		fmt.Fprintf(w, "Configuration: %s (from %s)\n", src.File, src.Via)
	} else {
		fmt.Fprintf(w, "Configuration: built-in defaults (none of %s exists)\n", strings.Join(src.Searched, ", "))
	}
	if src.Images != "" {
		fmt.Fprintf(w, "Docker images recorded by scripts/build-images.sh: %s\n", src.Images)
	}
}

// probeAll probes the registered backends, and lists those of
// backend.Preference this binary does not carry, so that doctor always
// answers for native, bwrap and docker.
func probeAll(ctx context.Context, r *backend.Registry, opts backend.Options) []backendInfo {
	var out []backendInfo
	reports := r.Reports(ctx, opts)
	for _, rep := range reports {
		out = append(out, backendInfo{
			Name:        rep.Backend,
			Available:   rep.Available,
			Reason:      rep.Reason,
			RunsRefused: rep.Refused,
			Checks:      nonNilChecks(rep.Checks),
			Warnings:    nonNil(rep.Warnings),
		})
	}
	for _, name := range backend.Preference {
		if !slices.ContainsFunc(out, func(b backendInfo) bool { return b.Name == name }) {
			out = append(out, backendInfo{Name: name, Reason: "not built into this binary",
				Checks: []sandbox.Check{}, Warnings: []string{}})
		}
	}
	return out
}

func nonNilChecks(c []sandbox.Check) []sandbox.Check {
	if c == nil {
		return []sandbox.Check{}
	}
	return c
}
