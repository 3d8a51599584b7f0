package sandbox

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// Bounds on the size of a spec, so that no request can make the sandbox
// setup itself grow without limit.
const (
	MaxArgs       = 4096
	MaxEnv        = 4096
	MaxArgBytes   = 1 << 20
	MaxMounts     = 128
	MaxFiles      = 1024
	MaxFilesBytes = 64 << 20
)

// Validate checks a spec whose Limits already went through WithDefaults. It
// names the offending field in the error.
func (s *Spec) Validate() error {
	if len(s.Args) == 0 {
		return fmt.Errorf("%w: Args is empty", ErrInvalidSpec)
	}
	if len(s.Args) > MaxArgs || len(s.Env) > MaxEnv {
		return fmt.Errorf("%w: too many Args or Env entries", ErrInvalidSpec)
	}
	if !path.IsAbs(s.Args[0]) {
		return fmt.Errorf("%w: Args[0] %q is not an absolute path", ErrInvalidSpec, s.Args[0])
	}
	total := 0
	for i, a := range s.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: Args[%d] contains a NUL byte", ErrInvalidSpec, i)
		}
		total += len(a)
	}
	for i, e := range s.Env {
		if strings.IndexByte(e, 0) >= 0 || !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return fmt.Errorf("%w: Env[%d] is not KEY=value", ErrInvalidSpec, i)
		}
		total += len(e)
	}
	if total > MaxArgBytes {
		return fmt.Errorf("%w: Args and Env hold %d bytes, more than %d", ErrInvalidSpec, total, MaxArgBytes)
	}
	if s.Dir != "" && (!path.IsAbs(s.Dir) || strings.IndexByte(s.Dir, 0) >= 0) {
		return fmt.Errorf("%w: Dir %q is not an absolute path", ErrInvalidSpec, s.Dir)
	}
	if s.KeepOutput < 0 {
		return fmt.Errorf("%w: KeepOutput %d is negative", ErrInvalidSpec, s.KeepOutput)
	}
	if len(s.Mounts) > MaxMounts {
		return fmt.Errorf("%w: %d Mounts, more than %d", ErrInvalidSpec, len(s.Mounts), MaxMounts)
	}
	for i, m := range s.Mounts {
		if !isCleanAbs(m.Source) {
			return fmt.Errorf("%w: Mounts[%d].Source %q is not a clean absolute path", ErrInvalidSpec, i, m.Source)
		}
		if m.Target != "" && !isCleanAbs(m.Target) {
			return fmt.Errorf("%w: Mounts[%d].Target %q is not a clean absolute path", ErrInvalidSpec, i, m.Target)
		}
		if t := m.target(); t == "/" || reserved(t) {
			return fmt.Errorf("%w: Mounts[%d].Target %q is reserved by the sandbox", ErrInvalidSpec, i, t)
		}
	}
	if s.Workspace != "" && !isCleanAbs(s.Workspace) {
		return fmt.Errorf("%w: Workspace %q is not a clean absolute path", ErrInvalidSpec, s.Workspace)
	}
	if len(s.Files)+len(s.TmpFiles) > MaxFiles {
		return fmt.Errorf("%w: %d Files and TmpFiles, more than %d", ErrInvalidSpec, len(s.Files)+len(s.TmpFiles), MaxFiles)
	}
	size := 0
	for _, set := range []struct {
		name  string
		files []File
	}{{"Files", s.Files}, {"TmpFiles", s.TmpFiles}} {
		n, err := validFiles(set.name, set.files)
		if err != nil {
			return err
		}
		size += n
	}
	if size > MaxFilesBytes {
		return fmt.Errorf("%w: Files and TmpFiles hold %d bytes, more than %d", ErrInvalidSpec, size, MaxFilesBytes)
	}
	return s.Limits.Validate()
}

// validFiles checks the files of the spec's field name and returns the
// size of their contents.
func validFiles(name string, files []File) (int, error) {
	size := 0
	for i, f := range files {
		if err := ValidRelativePath(f.Path); err != nil {
			return 0, fmt.Errorf("%w: %s[%d].Path: %w", ErrInvalidSpec, name, i, err)
		}
		if f.Mode&^0o777 != 0 {
			return 0, fmt.Errorf("%w: %s[%d].Mode %v has bits other than permissions", ErrInvalidSpec, name, i, f.Mode)
		}
		size += len(f.Content)
	}
	return size, nil
}

// Target is the path of the mount inside the sandbox.
func (m Mount) target() string {
	if m.Target == "" {
		return m.Source
	}
	return m.Target
}

// TargetPath is the path of the mount inside the sandbox.
func (m Mount) TargetPath() string { return m.target() }

// ValidRelativePath accepts a clean relative path that stays inside the
// directory it is relative to: no "..", no absolute path, no NUL.
func ValidRelativePath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q contains a NUL byte", p)
	case path.IsAbs(p):
		return fmt.Errorf("%q is absolute", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not clean", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q leaves the workspace", p)
	case len(p) > 4096:
		return fmt.Errorf("path longer than 4096 bytes")
	}
	return nil
}

func isCleanAbs(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && strings.IndexByte(p, 0) < 0 && len(p) <= 4096
}

// SyntheticEtc lists the files (and the directory of FontsConf) every
// backend writes into the sandbox's own /etc; a mount may not replace them.
var SyntheticEtc = []string{"passwd", "group", "hosts", "hostname", "nsswitch.conf", "resolv.conf", "ld.so.cache", "fonts"}

// reserved reports whether a sandbox path is owned by the backend itself.
// Below /etc only the synthetic files and AlternativesDir are: toolchains
// such as Debian's JDK keep their configuration there.
func reserved(p string) bool {
	for _, r := range []string{"/proc", "/dev", WorkspaceDir, TmpDir} {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	if p == "/etc" {
		return true
	}
	for _, name := range SyntheticEtc {
		if p == "/etc/"+name || strings.HasPrefix(p, "/etc/"+name+"/") {
			return true
		}
	}
	return p == AlternativesDir || strings.HasPrefix(p, AlternativesDir+"/")
}

// Prepared returns a copy of spec with its limits' defaults filled in,
// validated. Backends call it first in Run, so that they all refuse the
// same specs with the same errors.
func Prepared(spec *Spec) (*Spec, error) {
	s := *spec
	s.Limits = s.Limits.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// PreparedToRun is Prepared for a run about to start under ctx: a spec it
// refuses comes first, then a ctx that has already ended.
func PreparedToRun(ctx context.Context, spec *Spec) (*Spec, error) {
	s, err := Prepared(spec)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s, nil
}
