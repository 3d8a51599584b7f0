// Package assembly builds coderunner's parts from one configuration, in
// one place: the sandbox backend (through internal/backend), the language
// table, the single-run executor (execute), the /execute invoker (invoke),
// the session store, the judge's engine (runner) and the judge's options,
// and the limits of a run that names none. The Go API (coderunner.New) and
// every subcommand of the command line take their parts from here, so that
// a setting of the configuration reaches every front end the same way.
//
// Callers choose which parts they need (Options): a one-shot command
// builds only what it uses, since some parts touch the disk when built
// (the executor sweeps dead workspaces, the session store and the compile
// cache make their directories). Parts.Close releases them in order: the
// sessions, then the backend.
package assembly
