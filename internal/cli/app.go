package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
)

// Exit statuses of coderunner itself. run otherwise exits with the
// program's own code.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitTimeout     = 124
	ExitSandbox     = 125
	ExitInterrupted = 130
	ExitMemory      = 137
)

// App is one invocation of the command line: its streams, environment and
// backends. Tests build one with buffers and a registry of fakes.
type App struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// LookupEnv reads the environment, for the configuration.
	LookupEnv func(string) (string, bool)
	// Registry holds the backends; nil means backend.Default.
	Registry *backend.Registry
	// ConfigDir is the system-wide configuration directory; empty means
	// config.SystemDir (/etc/coderunner).
	ConfigDir string
	// Version and Commit are set at build time with -ldflags -X.
	Version, Commit string
}

// Main runs the command line on the process's own streams and returns the
// exit status. Started as PID 1 (a container's first process), it runs the
// command line again as the child of an init (coderunner init).
func Main(ctx context.Context, args []string, version, commit string) int {
	a := &App{
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		LookupEnv: os.LookupEnv,
		Version:   version,
		Commit:    commit,
	}
	if os.Getpid() == 1 && (len(args) == 0 || args[0] != "init") {
		return a.asInit(args)
	}
	return a.Run(ctx, args)
}

// command is one subcommand. Adding judge, serve or mcp is one more entry
// in commands and one more file.
type command struct {
	name    string
	summary string
	run     func(a *App, ctx context.Context, args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"run", "execute one program in the sandbox", (*App).runCmd},
		{"judge", "compile once, run every test case and judge the outputs", (*App).judgeCmd},
		{"serve", "serve the HTTP API: /execute, /v1/run, /v1/judge, /health, /metrics", (*App).serveCmd},
		{"doctor", "show what works on this machine: backends, isolation, toolchains", (*App).doctorCmd},
		{"langs", "list the languages and whether their toolchains are available", (*App).langsCmd},
		{"version", "print the version and commit", (*App).versionCmd},
		{"keyhash", "print the SHA-256 of an API key for server.api_keys, or make a key", (*App).keyhashCmd},
		{"mcp", "serve the MCP tools execute_code, judge_code and list_languages over stdio", (*App).mcpCmd},
		{"init", "run a command as a container's init: forward signals, reap orphans", (*App).initCmd},
	}
}

// Run executes the subcommand named by args[0] and returns the exit status.
func (a *App) Run(ctx context.Context, args []string) int {
	if a.Registry == nil {
		a.Registry = backend.Default
	}
	if a.LookupEnv == nil {
		a.LookupEnv = os.LookupEnv
	}
	if len(args) == 0 {
		a.usage(a.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := findCommand(args[1]); ok {
				return c.run(a, ctx, []string{"-h"})
			}
			return a.fail("help", "unknown command %q", args[1])
		}
		a.usage(a.Stdout)
		return ExitOK
	case "-version", "--version":
		name = "version"
	}
	c, ok := findCommand(name)
	if !ok {
		a.usage(a.Stderr)
		return a.fail("", "unknown command %q", name)
	}
	return c.run(a, ctx, args[1:])
}

func findCommand(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands[i], true
}

func (a *App) usage(w io.Writer) {
	fmt.Fprintf(w, "coderunner runs untrusted code in a sandbox.\n\nUsage:\n  coderunner COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-9s %s\n", "help", "show the flags of a command: coderunner help run")
	fmt.Fprintf(w, "\nRun 'coderunner COMMAND -h' for the flags of a command.\n")
	fmt.Fprintf(w, "\nConfiguration: the first that is given or exists of --config FILE, $%s,\n"+
		"$XDG_CONFIG_HOME/coderunner/config.yaml (~/.config when unset) and %s/config.yaml;\n"+
		"beneath it, the docker images scripts/build-images.sh recorded in %s/%s;\n"+
		"CODERUNNER_* variables override both. 'coderunner doctor' says which file it loaded.\n",
		config.EnvConfig, config.SystemDir, config.SystemDir, config.ImagesFile)
}

// fail prints a one-line error for cmd and returns ExitUsage.
func (a *App) fail(cmd, format string, args ...any) int {
	prefix := "coderunner"
	if cmd != "" {
		prefix += " " + cmd
	}
	fmt.Fprintf(a.Stderr, "%s: %s\n", prefix, fmt.Sprintf(format, args...))
	return ExitUsage
}

// common holds the flags every command takes.
type common struct {
	backend  string
	config   string
	logLevel string
	json     bool
	// allowRlimitsOnly is --allow-rlimits-only, over the configuration's
	// backend.allow_rlimits_only when given.
	allowRlimitsOnly bool
	// source is where setup found the configuration.
	source config.Source
	// usage prints the command's help. The FlagSet's own Usage is a no-op
	// because flag calls it on every parse error, and an error must stay
	// one line.
	usage func()
}

// flagSet makes the FlagSet of a command with the common flags. Its usage
// goes to stdout, since it is asked for; errors are reported by parse.
func (a *App) flagSet(name, args, about string, withBackend bool) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet("coderunner "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &common{}
	if withBackend {
		fs.StringVar(&c.backend, "backend", backend.Auto,
			"sandbox backend `NAME`: auto, native, bwrap or docker; auto takes the first that works here, in that order (the configuration's backend.name may change the default)")
		fs.BoolVar(&c.allowRlimitsOnly, "allow-rlimits-only", false,
			"where no cgroup is usable (an ordinary user without a delegated cgroup), run programs anyway with memory, process and CPU limits enforced per process by rlimits only, not for the whole process tree, with a warning; without it such runs are refused (configuration: backend.allow_rlimits_only, environment: CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY)")
	}
	fs.StringVar(&c.config, "config", "", "YAML configuration `FILE` (default: $"+config.EnvConfig+", else $XDG_CONFIG_HOME/coderunner/config.yaml (~/.config when unset), else "+config.SystemDir+"/config.yaml: the first that exists; the images scripts/build-images.sh recorded in "+config.SystemDir+"/"+config.ImagesFile+" lie beneath it); CODERUNNER_* environment variables override it")
	fs.StringVar(&c.logLevel, "log-level", "warn", "log `LEVEL`: debug, info, warn or error (JSON lines on stderr)")
	fs.BoolVar(&c.json, "json", false, "print one JSON object instead of text")
	fs.Usage = func() {}
	c.usage = func() {
		w := a.Stdout
		fmt.Fprintf(w, "Usage: coderunner %s [flags] %s\n\n%s\n\nFlags:\n", name, args, about)
		printFlags(w, fs)
	}
	return fs, c
}

// parse parses args and reports a bad flag in one line naming it. done is
// true when the command must return code at once (after -h or an error).
func (a *App) parse(fs *flag.FlagSet, c *common, args []string) (pos []string, code int, done bool) {
	pos, rest, code, done := a.parseDash(fs, c, args)
	return append(pos, rest...), code, done
}

// parseDash is parse keeping apart the arguments after "--" (rest).
func (a *App) parseDash(fs *flag.FlagSet, c *common, args []string) (pos, rest []string, code int, done bool) {
	pos, rest, err := parseArgsDash(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.usage()
		return nil, nil, ExitOK, true
	case err != nil:
		name := strings.TrimPrefix(fs.Name(), "coderunner ")
		return nil, nil, a.fail(name, "%s (see coderunner %s -h)", dashes(err.Error()), name), true
	}
	return pos, rest, 0, false
}

var singleDash = regexp.MustCompile(`(^|: | for | flag )-([A-Za-z])`)

// dashes rewrites the flag package's "-memory" as "--memory", the spelling
// the documentation uses.
func dashes(msg string) string { return singleDash.ReplaceAllString(msg, "$1--$2") }

// printFlags documents every flag with the double-dash spelling.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// setup loads the configuration and makes the logger the common flags
// ask for. A bad flag or configuration is a usage error naming it.
func (a *App) setup(fs *flag.FlagSet, c *common) (*config.Config, *slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", c.logLevel)
	}
	log := slog.New(slog.NewJSONHandler(a.Stderr, &slog.HandlerOptions{Level: level}))
	dir := a.ConfigDir
	if dir == "" {
		dir = config.SystemDir
	}
	src, err := config.Find(c.config, a.LookupEnv, dir)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.LoadSource(src, a.LookupEnv)
	if err != nil {
		if src.Via == "--config" || src.Via == config.EnvConfig {
			return nil, nil, fmt.Errorf("%s: %w", src.Via, err)
		}
		return nil, nil, err
	}
	c.source = src
	if fs.Lookup("backend") != nil && !isSet(fs, "backend") {
		c.backend = cfg.Backend.Name
	}
	if isSet(fs, "allow-rlimits-only") {
		cfg.Backend.AllowRlimitsOnly = c.allowRlimitsOnly
	}
	if c.backend != "" && c.backend != backend.Auto &&
		!slices.Contains(backend.Preference, c.backend) && !slices.Contains(a.Registry.Names(), c.backend) {
		return nil, nil, fmt.Errorf("--backend: %q is not auto, native, bwrap or docker", c.backend)
	}
	return cfg, log, nil
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
