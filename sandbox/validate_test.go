package sandbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestSpecValidate(t *testing.T) {
	ok := func() *Spec {
		return &Spec{Args: []string{"/bin/true"}, Limits: Limits{}.WithDefaults()}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		field string // "" when the spec is valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"no args", func(s *Spec) { s.Args = nil }, "Args is empty"},
		{"relative argv0", func(s *Spec) { s.Args = []string{"true"} }, "Args[0]"},
		{"nul in arg", func(s *Spec) { s.Args = append(s.Args, "a\x00b") }, "Args[1]"},
		{"env without =", func(s *Spec) { s.Env = []string{"PATH"} }, "Env[0]"},
		{"env nul", func(s *Spec) { s.Env = []string{"A=\x00"} }, "Env[0]"},
		{"huge env", func(s *Spec) { s.Env = []string{"A=" + strings.Repeat("x", MaxArgBytes)} }, "bytes"},
		{"relative dir", func(s *Spec) { s.Dir = "work" }, "Dir"},
		{"mount relative", func(s *Spec) { s.Mounts = []Mount{{Source: "usr"}} }, "Mounts[0].Source"},
		{"mount unclean", func(s *Spec) { s.Mounts = []Mount{{Source: "/usr/../etc"}} }, "Mounts[0].Source"},
		{"mount on proc", func(s *Spec) { s.Mounts = []Mount{{Source: "/usr", Target: "/proc/x"}} }, "reserved"},
		{"mount on root", func(s *Spec) { s.Mounts = []Mount{{Source: "/usr", Target: "/"}} }, "reserved"},
		{"mount on etc", func(s *Spec) { s.Mounts = []Mount{{Source: "/etc"}} }, "reserved"},
		{"mount on passwd", func(s *Spec) { s.Mounts = []Mount{{Source: "/etc/passwd"}} }, "reserved"},
		{"mount on workspace", func(s *Spec) { s.Mounts = []Mount{{Source: "/srv", Target: WorkspaceDir}} }, "reserved"},
		{"mount below etc", func(s *Spec) { s.Mounts = []Mount{{Source: "/etc/java-17-openjdk"}} }, ""},
		{"mount on alternatives", func(s *Spec) { s.Mounts = []Mount{{Source: "/srv", Target: AlternativesDir}} }, "reserved"},
		{"mount below alternatives", func(s *Spec) { s.Mounts = []Mount{{Source: "/srv", Target: AlternativesDir + "/cc"}} }, "reserved"},
		{"mount beside alternatives", func(s *Spec) { s.Mounts = []Mount{{Source: "/srv", Target: AlternativesDir + ".d"}} }, ""},
		{"file escapes", func(s *Spec) { s.Files = []File{{Path: "../x"}} }, "Files[0].Path"},
		{"file absolute", func(s *Spec) { s.Files = []File{{Path: "/etc/x"}} }, "Files[0].Path"},
		{"file unclean", func(s *Spec) { s.Files = []File{{Path: "a//b"}} }, "Files[0].Path"},
		{"file mode", func(s *Spec) { s.Files = []File{{Path: "a", Mode: 0o4755}} }, "Files[0].Mode"},
		{"tmp file", func(s *Spec) { s.TmpFiles = []File{{Path: "matplotlib/fontlist.json", Content: []byte("{}")}} }, ""},
		{"tmp file escapes", func(s *Spec) { s.TmpFiles = []File{{Path: "a"}, {Path: "../workspace/x"}} }, "TmpFiles[1].Path"},
		{"tmp file absolute", func(s *Spec) { s.TmpFiles = []File{{Path: "/tmp/x"}} }, "TmpFiles[0].Path"},
		{"tmp file mode", func(s *Spec) { s.TmpFiles = []File{{Path: "a", Mode: 0o2755}} }, "TmpFiles[0].Mode"},
		{"files and tmp files too many", func(s *Spec) {
			s.Files = make([]File, MaxFiles/2+1)
			for i := range s.Files {
				s.Files[i].Path = "f" + strings.Repeat("x", i)
			}
			s.TmpFiles = s.Files
		}, "Files and TmpFiles, more than"},
		{"files and tmp files too large", func(s *Spec) {
			s.Files = []File{{Path: "a", Content: make([]byte, MaxFilesBytes/2+1)}}
			s.TmpFiles = s.Files
		}, "Files and TmpFiles hold"},
		{"memory", func(s *Spec) { s.Limits.Memory = 1 }, "Memory"},
		{"wall", func(s *Spec) { s.Limits.WallTime = 2 * MaxWallTime }, "WallTime"},
		{"processes", func(s *Spec) { s.Limits.Processes = MaxProcesses + 1 }, "Processes"},
		{"output", func(s *Spec) { s.Limits.OutputBytes = -1 }, "OutputBytes"},
		{"keep output", func(s *Spec) { s.KeepOutput = -1 }, "KeepOutput"},
		{"open files", func(s *Spec) { s.Limits.OpenFiles = 3 }, "OpenFiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok()
			tc.edit(s)
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err %v, want ErrInvalidSpec naming %q", err, tc.field)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	l := Limits{Memory: 32 * MiB}.WithDefaults()
	if l.Memory != 32*MiB || l.WallTime != DefaultLimits.WallTime || l.Processes != DefaultLimits.Processes {
		t.Fatalf("WithDefaults kept or filled the wrong fields: %+v", l)
	}
	if err := DefaultLimits.Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
}

func TestOverlay(t *testing.T) {
	base := Limits{WallTime: 1, Memory: 2, Processes: 3}
	got := base.Overlay(Limits{Memory: 20, TmpSize: 40})
	want := Limits{WallTime: 1, Memory: 20, Processes: 3, TmpSize: 40}
	if got != want {
		t.Fatalf("Overlay = %+v, want %+v", got, want)
	}
	if base.Memory != 2 {
		t.Fatal("Overlay changed its receiver")
	}
}

func TestSystemMounts(t *testing.T) {
	ms := SystemMounts()
	if len(ms) == 0 || ms[0].Source != "/usr" {
		t.Fatalf("SystemMounts() = %+v, want /usr first", ms)
	}
	for _, m := range ms {
		if m.Writable || m.Target != "" {
			t.Errorf("mount %+v: want read-only at its own path", m)
		}
		if _, err := os.Lstat(m.Source); err != nil {
			t.Errorf("mount of a path the host lacks: %v", err)
		}
	}
}

func TestPreparedToRun(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	valid := &Spec{Args: []string{"/bin/true"}}
	invalid := &Spec{}
	tests := []struct {
		name string
		ctx  context.Context
		spec *Spec
		want error
	}{
		{"ready", context.Background(), valid, nil},
		{"ended context", ended, valid, context.Canceled},
		{"invalid spec", context.Background(), invalid, ErrInvalidSpec},
		{"invalid spec and ended context: the spec is refused first", ended, invalid, ErrInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := PreparedToRun(tt.ctx, tt.spec)
			if !errors.Is(err, tt.want) || (err == nil) != (s != nil) {
				t.Fatalf("PreparedToRun = %v, %v; want error %v", s, err, tt.want)
			}
			if s != nil && s.Limits != DefaultLimits {
				t.Fatalf("limits %+v, want the defaults filled in", s.Limits)
			}
		})
	}
}
