package sandbox

import "context"

// Backend runs programs in isolation.
type Backend interface {
	// Name is the backend's identifier: "native", "bwrap" or "docker".
	Name() string
	// Run executes spec and waits for it. Cancelling ctx stops the program
	// and everything it started. A returned error means the sandbox itself
	// failed (ErrInvalidSpec for a spec it refuses, ErrUnavailable when it
	// cannot work here); the program's fate is always in the Result.
	Run(ctx context.Context, spec *Spec) (*Result, error)
}

// WorkspaceInspector is implemented by backends that call Spec.Inspect:
// a caller that wants to read what a program left in its workspace can
// then let it run in the sandbox's private workspace instead of making a
// host directory for it.
type WorkspaceInspector interface {
	// InspectsWorkspace reports whether Run calls Spec.Inspect.
	InspectsWorkspace() bool
}

// Prober is implemented by backends that can tell what works on this
// machine. doctor uses it.
type Prober interface {
	// Probe reports the facilities the backend found. A backend that
	// cannot run here returns a report with Available false and the
	// reason.
	Probe(ctx context.Context) Report
}

// Report is what a backend found about this machine.
type Report struct {
	Backend   string
	Available bool
	// Reason says why the backend is unavailable, or is empty.
	Reason string
	// Checks are named facts, e.g. "user namespaces": "yes".
	Checks []Check
	// Warnings are weaknesses the backend has here.
	Warnings []string
	// Refused, when set, says why every run is refused though the
	// backend works here: a guarantee cannot hold and the caller did not
	// opt out of it (ErrNoCgroup).
	Refused string
}

// Check is one fact of a Report.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// TmpFiler is implemented by backends that place Spec.TmpFiles (native
// and bwrap, whose programs run the host's own toolchains): a caller
// hands a run a ready cache only where it will be there.
type TmpFiler interface {
	// PlacesTmpFiles reports whether Run places Spec.TmpFiles.
	PlacesTmpFiles() bool
}

// PlacesTmpFiles reports whether b places Spec.TmpFiles.
func PlacesTmpFiles(b Backend) bool {
	tf, ok := b.(TmpFiler)
	return ok && tf.PlacesTmpFiles()
}

// Reuser is implemented by backends that can run programs one after
// another in one sandbox, which saves creating and tearing down the
// sandbox per run: the tests of one solution, above all.
type Reuser interface {
	// Series returns a new, empty Series.
	Series() Series
}

// Series runs specs like Backend.Run, keeping the sandbox of a run that
// ended normally for a later run of the same series whose spec differs
// only in its stdin, its program's arguments, environment and files, and
// its limits. Each run still starts clean: no process of an earlier run
// is alive, /tmp and /workspace are empty but for the run's own files,
// IPC objects are fresh, and time and memory are measured for the run
// alone. A kept sandbox is never shared between series: use one series
// for runs of the same code, never across callers.
//
// A Series is safe for concurrent use; concurrent runs use different
// sandboxes.
type Series interface {
	// Run executes spec as Backend.Run does.
	Run(ctx context.Context, spec *Spec) (*Result, error)
	// Close releases the sandboxes the series keeps. Runs under way are
	// not affected; their sandboxes are released when they end.
	Close() error
}
