package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

// Auto is the name that asks Open for the strongest backend that works here.
const Auto = "auto"

// Preference is the order in which Auto tries backends: strongest isolation
// and fewest moving parts first.
var Preference = []string{"native", "bwrap", "docker"}

// Error classes returned by Open. Callers test them with errors.Is.
var (
	// ErrUnknownBackend: no factory is registered under the name.
	ErrUnknownBackend = errors.New("unknown backend")
	// ErrNoBackend: "auto" found no backend that works on this machine.
	ErrNoBackend = errors.New("no sandbox backend works here")
)

// Options is what Open and Reports build backends with.
type Options struct {
	// Logger receives the backends' logs. A nil Logger is replaced by one
	// that discards everything.
	Logger *slog.Logger
	// Config is the loaded configuration, or nil for the defaults. No
	// factory sees it whole: each is handed its own section of it (see
	// Module).
	Config *config.Config
	// TempDir is where a backend may create its temporary files and
	// directories; empty means os.TempDir().
	TempDir string
	// Warm asks backends that can to start this many sandboxes ahead of
	// need. Long-lived callers (the server) set it; one-shot commands
	// leave it zero. Backends that hold warm sandboxes implement io.Closer.
	Warm int
}

// Env is what every factory receives besides its own section of the
// configuration.
type Env struct {
	// Logger receives the backend's logs; never nil.
	Logger *slog.Logger
	// TempDir is where the backend may create its temporary files and
	// directories; empty means os.TempDir().
	TempDir string
	// Warm is the number of sandboxes to start ahead of need (Options.Warm).
	Warm int
}

// Module is a backend as it registers, the way Caddy modules do: its name,
// the typed section of the configuration it reads, and its factory, which
// the registry hands that section.
type Module[S any] struct {
	// Name is what users call the backend (backend.name, --backend).
	Name string
	// Section takes the backend's own section out of a loaded
	// configuration. Nil means the backend has none. The factory is given
	// the zero S when Section is nil or there is no configuration
	// (Options.Config nil): the backend's defaults.
	Section func(*config.Config) (S, error)
	// New builds the backend. It fails when the backend cannot be set up
	// at all; a backend that was built but cannot run here says so
	// through sandbox.Prober.
	New func(Env, S) (sandbox.Backend, error)
}

// factory builds a backend from the caller's options: it takes the
// backend's section out of the configuration and calls the module's New.
type factory func(Options) (sandbox.Backend, error)

// Registry maps backend names to their modules. The zero value is not
// usable; use NewRegistry. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: make(map[string]factory)}
}

// Default is the registry that backend packages register with from their
// init functions.
var Default = NewRegistry()

// Register makes a backend available in the Default registry; see Add.
func Register[S any](m Module[S]) { Add(Default, m) }

// Open builds the backend called name from the Default registry; see
// (*Registry).Open.
func Open(ctx context.Context, name string, opts Options) (sandbox.Backend, error) {
	return Default.Open(ctx, name, opts)
}

// Add makes a backend available in r under m.Name. It panics on an empty
// or reserved name, a nil New or a name registered twice, since each is a
// programming error found at start-up.
func Add[S any](r *Registry, m Module[S]) {
	if m.New == nil {
		panic("backend: nil factory for " + m.Name)
	}
	r.add(m.Name, func(o Options) (sandbox.Backend, error) {
		var s S
		if o.Config != nil && m.Section != nil {
			var err error
			if s, err = m.Section(o.Config); err != nil {
				return nil, err
			}
		}
		return m.New(Env{Logger: o.Logger, TempDir: o.TempDir, Warm: o.Warm}, s)
	})
}

// add registers f under name; see Add.
func (r *Registry) add(name string, f factory) {
	if name == "" || name == Auto || strings.TrimSpace(name) != name {
		panic(fmt.Sprintf("backend: invalid backend name %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		panic("backend: " + name + " registered twice")
	}
	r.factories[name] = f
}

// Names lists the registered backends, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Registry) factory(name string) (factory, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.factories[name]
	return f, ok
}

// Open builds the backend called name. With Auto it tries the backends of
// Preference in order and returns the first whose factory succeeds and, if
// it implements sandbox.Prober, whose probe says it is available; the error
// then lists why each one was passed over. A backend named explicitly is
// probed the same way, so that a user who asks for one that cannot work
// here learns why at once instead of at the first run.
func (r *Registry) Open(ctx context.Context, name string, opts Options) (sandbox.Backend, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if name != Auto {
		f, ok := r.factory(name)
		if !ok {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownBackend, name, strings.Join(r.known(), ", "))
		}
		b, err := r.try(ctx, name, f, opts)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	var reasons []string
	for _, n := range Preference {
		f, ok := r.factory(n)
		if !ok {
			reasons = append(reasons, n+": not built into this binary")
			continue
		}
		b, err := r.try(ctx, n, f, opts)
		if err == nil {
			opts.Logger.Debug("backend chosen", "backend", n)
			return b, nil
		}
		reasons = append(reasons, err.Error())
	}
	return nil, fmt.Errorf("%w: %s", ErrNoBackend, strings.Join(reasons, "; "))
}

// try builds one backend and probes it. A backend refused after it was
// built is closed if it holds resources.
func (r *Registry) try(ctx context.Context, name string, f factory, opts Options) (sandbox.Backend, error) {
	b, err := f(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if b == nil {
		return nil, fmt.Errorf("%s: %w: factory returned no backend", name, sandbox.ErrUnavailable)
	}
	p, ok := b.(sandbox.Prober)
	if !ok {
		return b, nil
	}
	rep := p.Probe(ctx)
	if rep.Available {
		return b, nil
	}
	closeBackend(b)
	reason := rep.Reason
	if reason == "" {
		reason = "probe found it unusable"
	}
	return nil, fmt.Errorf("%s: %w: %s", name, sandbox.ErrUnavailable, reason)
}

// Reports builds every registered backend and probes it, in the order of
// Preference and then by name. A backend whose factory fails, or that does
// not implement sandbox.Prober, still gets a report, so that doctor shows
// every backend the binary carries.
func (r *Registry) Reports(ctx context.Context, opts Options) []sandbox.Report {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var reports []sandbox.Report
	for _, name := range r.ordered() {
		f, _ := r.factory(name)
		b, err := f(opts)
		switch {
		case err != nil:
			reports = append(reports, sandbox.Report{Backend: name, Reason: err.Error()})
		case b == nil:
			reports = append(reports, sandbox.Report{Backend: name, Reason: "factory returned no backend"})
		default:
			if p, ok := b.(sandbox.Prober); ok {
				rep := p.Probe(ctx)
				if rep.Backend == "" {
					rep.Backend = name
				}
				reports = append(reports, rep)
			} else {
				reports = append(reports, sandbox.Report{Backend: name, Available: true,
					Warnings: []string{"backend cannot probe this machine; availability is assumed"}})
			}
			closeBackend(b)
		}
	}
	return reports
}

// ordered lists the registered names with those of Preference first.
func (r *Registry) ordered() []string {
	names := r.Names()
	out := make([]string, 0, len(names))
	for _, p := range Preference {
		if slices.Contains(names, p) {
			out = append(out, p)
		}
	}
	for _, n := range names {
		if !slices.Contains(Preference, n) {
			out = append(out, n)
		}
	}
	return out
}

// known lists the names Open accepts, for error messages.
func (r *Registry) known() []string {
	return append([]string{Auto}, r.ordered()...)
}

// closeBackend releases a backend that holds resources, such as a Docker
// client connection.
func closeBackend(b sandbox.Backend) {
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
}
