package backend

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/sandbox"
)

// fake is a backend whose availability the test decides.
type fake struct {
	name   string
	avail  bool
	reason string
	closed *int
}

func (f *fake) Name() string { return f.name }

func (f *fake) Run(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
	return &sandbox.Result{Status: sandbox.StatusOK}, nil
}

func (f *fake) Close() error {
	if f.closed != nil {
		*f.closed++
	}
	return nil
}

// prober is a fake that implements sandbox.Prober.
type prober struct{ fake }

func (p *prober) Probe(context.Context) sandbox.Report {
	return sandbox.Report{Backend: p.name, Available: p.avail, Reason: p.reason}
}

// moduleFor returns a module for a backend described by kind:
// "ok" (no prober), "up" (prober, available), "down" (prober, unavailable),
// "fail" (factory error).
func moduleFor(name, kind string, closed *int) Module[struct{}] {
	return Module[struct{}]{Name: name, New: func(Env, struct{}) (sandbox.Backend, error) {
		switch kind {
		case "fail":
			return nil, errors.New("cannot build " + name)
		case "ok":
			return &fake{name: name, closed: closed}, nil
		case "up":
			return &prober{fake{name: name, avail: true, closed: closed}}, nil
		default:
			return &prober{fake{name: name, reason: name + " is down", closed: closed}}, nil
		}
	}}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name     string
		backends map[string]string // name -> kind
		open     string
		want     string   // backend name chosen, "" for an error
		wantErr  error    // class of the error
		inErr    []string // substrings of the error
		closed   int      // backends closed after being refused
	}{
		{name: "auto prefers native", backends: map[string]string{"native": "up", "bwrap": "up", "docker": "up"},
			open: Auto, want: "native"},
		{name: "auto skips unavailable native", backends: map[string]string{"native": "down", "bwrap": "up"},
			open: Auto, want: "bwrap", closed: 1},
		{name: "auto skips failing factory", backends: map[string]string{"native": "fail", "docker": "ok"},
			open: Auto, want: "docker"},
		{name: "auto ignores unlisted backends", backends: map[string]string{"extra": "up"},
			open: Auto, wantErr: ErrNoBackend, inErr: []string{"native: not built", "bwrap: not built", "docker: not built"}},
		{name: "auto lists every reason", backends: map[string]string{"native": "down", "bwrap": "fail", "docker": "down"},
			open: Auto, wantErr: ErrNoBackend, inErr: []string{"native is down", "cannot build bwrap", "docker is down"}, closed: 2},
		{name: "explicit available", backends: map[string]string{"native": "up", "docker": "up"},
			open: "docker", want: "docker"},
		{name: "explicit without prober", backends: map[string]string{"bwrap": "ok"},
			open: "bwrap", want: "bwrap"},
		{name: "explicit unavailable", backends: map[string]string{"docker": "down"},
			open: "docker", wantErr: sandbox.ErrUnavailable, inErr: []string{"docker is down"}, closed: 1},
		{name: "explicit factory error", backends: map[string]string{"native": "fail"},
			open: "native", inErr: []string{"cannot build native"}},
		{name: "unknown", backends: map[string]string{"native": "up"},
			open: "podman", wantErr: ErrUnknownBackend, inErr: []string{`"podman"`, "auto, native"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			closed := 0
			for n, kind := range tt.backends {
				Add(r, moduleFor(n, kind, &closed))
			}
			b, err := r.Open(context.Background(), tt.open, Options{})
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Open(%q): %v", tt.open, err)
				}
				if b.Name() != tt.want {
					t.Errorf("Open(%q) = %s, want %s", tt.open, b.Name(), tt.want)
				}
			} else {
				if err == nil {
					t.Fatalf("Open(%q) = %s, want an error", tt.open, b.Name())
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v is not %v", err, tt.wantErr)
				}
				for _, s := range tt.inErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
			}
			if closed != tt.closed {
				t.Errorf("%d backends closed, want %d", closed, tt.closed)
			}
		})
	}
}

// TestOpenPassesSection checks that a factory is handed its own section of
// the configuration (the zero one without a configuration) and the common
// options, and that a section that cannot be made fails Open.
func TestOpenPassesSection(t *testing.T) {
	type section struct{ path string }
	r := NewRegistry()
	var gotEnv Env
	var gotSection section
	Add(r, Module[section]{
		Name: "bwrap",
		Section: func(c *config.Config) (section, error) {
			if c.Backend.BwrapPath == "/bad" {
				return section{}, errors.New("bad section")
			}
			return section{path: c.Backend.BwrapPath}, nil
		},
		New: func(e Env, s section) (sandbox.Backend, error) {
			gotEnv, gotSection = e, s
			return &fake{name: "bwrap"}, nil
		},
	})
	cfg := config.Default()
	cfg.Backend.BwrapPath = "/opt/bwrap"
	if _, err := r.Open(context.Background(), "bwrap", Options{Config: cfg, TempDir: "/var/tmp", Warm: 3}); err != nil {
		t.Fatal(err)
	}
	if gotEnv.Logger == nil {
		t.Error("factory received a nil Logger")
	}
	if gotEnv.TempDir != "/var/tmp" || gotEnv.Warm != 3 {
		t.Errorf("factory received %+v", gotEnv)
	}
	if gotSection.path != "/opt/bwrap" {
		t.Errorf("factory received section %+v, want the configuration's path", gotSection)
	}

	if _, err := r.Open(context.Background(), "bwrap", Options{}); err != nil {
		t.Fatal(err)
	}
	if gotSection != (section{}) {
		t.Errorf("without a configuration the factory received %+v, want the zero section", gotSection)
	}

	cfg.Backend.BwrapPath = "/bad"
	if _, err := r.Open(context.Background(), "bwrap", Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), "bad section") {
		t.Errorf("Open with a bad section: %v, want its error", err)
	}
}

func TestReports(t *testing.T) {
	r := NewRegistry()
	closed := 0
	Add(r, moduleFor("docker", "down", &closed))
	Add(r, moduleFor("zz", "ok", &closed))
	Add(r, moduleFor("native", "up", &closed))
	Add(r, moduleFor("bwrap", "fail", &closed))

	reps := r.Reports(context.Background(), Options{})
	var names []string
	for _, rep := range reps {
		names = append(names, rep.Backend)
	}
	if want := []string{"native", "bwrap", "docker", "zz"}; !slices.Equal(names, want) {
		t.Fatalf("reports for %v, want %v", names, want)
	}
	want := []struct {
		avail  bool
		reason string
	}{{true, ""}, {false, "cannot build bwrap"}, {false, "docker is down"}, {true, ""}}
	for i, w := range want {
		if reps[i].Available != w.avail || reps[i].Reason != w.reason {
			t.Errorf("report %s = %+v, want available=%v reason=%q", reps[i].Backend, reps[i], w.avail, w.reason)
		}
	}
	if len(reps[3].Warnings) == 0 {
		t.Error("a backend without a prober should carry a warning")
	}
	if closed != 3 {
		t.Errorf("%d backends closed after probing, want 3", closed)
	}
}

func TestRegisterPanics(t *testing.T) {
	ok := moduleFor("x", "ok", nil).New
	tests := []struct {
		name    string
		regName string
		f       func(Env, struct{}) (sandbox.Backend, error)
	}{
		{"empty name", "", ok},
		{"auto", Auto, ok},
		{"spaces", " native", ok},
		{"nil factory", "native", nil},
		{"duplicate", "dup", ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			Add(r, moduleFor("dup", "ok", nil))
			defer func() {
				if recover() == nil {
					t.Errorf("Add(%q) did not panic", tt.regName)
				}
			}()
			Add(r, Module[struct{}]{Name: tt.regName, New: tt.f})
		})
	}
}

func TestNamesSorted(t *testing.T) {
	r := NewRegistry()
	for _, n := range []string{"docker", "native", "bwrap"} {
		Add(r, moduleFor(n, "ok", nil))
	}
	if got, want := r.Names(), []string{"bwrap", "docker", "native"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}
