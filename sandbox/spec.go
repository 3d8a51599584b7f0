package sandbox

import (
	"io"
	"io/fs"
	"os"
	"time"
)

// WorkspaceDir is where the writable workspace appears inside every sandbox.
// It is also the default working directory and HOME of the program.
const WorkspaceDir = "/workspace"

// TmpDir is the size-capped scratch directory inside every sandbox.
const TmpDir = "/tmp"

// Spec describes one program to run in a sandbox.
type Spec struct {
	// Args is the argument vector. Args[0] is an absolute path inside the
	// sandbox; no PATH lookup is done on it.
	Args []string

	// Env is the complete environment of the program, as "KEY=value"
	// strings. Nothing else is added: the caller's environment is never
	// inherited.
	Env []string

	// Stdin feeds the program's standard input. When nil, standard input
	// is /dev/null.
	Stdin io.Reader

	// Stdout and Stderr, when set, receive the program's output as it is
	// produced, in addition to the copy kept in the Result. Both see at
	// most Limits.OutputBytes bytes.
	Stdout io.Writer
	Stderr io.Writer

	// KeepOutput, when positive, bounds how much of each stream the Result
	// keeps (Result.Stdout and Result.Stderr hold the first KeepOutput
	// bytes). Stdout and Stderr still receive everything up to
	// Limits.OutputBytes, and the cap is enforced as usual. Zero keeps up
	// to Limits.OutputBytes. A caller that judges the output as it streams
	// sets it so that a large cap costs no memory.
	KeepOutput int64

	// Dir is the working directory inside the sandbox. Empty means
	// WorkspaceDir.
	Dir string

	// Mounts are host paths made visible inside the sandbox. They are
	// read-only unless Writable is set. A Source that is a symbolic link on
	// the host (such as /lib -> usr/lib) is recreated as the same link.
	Mounts []Mount

	// Workspace is a host directory mounted read-write at WorkspaceDir.
	// When empty the backend gives the run a private, size-capped,
	// throwaway workspace that is gone when Run returns.
	Workspace string

	// Files are written into the workspace before the program starts.
	Files []File

	// TmpFiles are written into the run's own /tmp before the program
	// starts (File.Path relative to TmpDir), owned by the program's user:
	// a cache its runtime would otherwise build in every run, which the
	// run may change or delete without any other run seeing it. Only
	// backends that say so (TmpFiler) place them; others refuse a spec
	// that has some.
	TmpFiles []File

	// Inspect, when set on a run without a Workspace, is called with the
	// root of the run's private workspace, open read-only, once the
	// program and everything it started can no longer write there, and
	// before Run returns; the backend closes it afterwards. The caller
	// reads what the program left (its artifacts) without following a
	// link: the program may have put anything there. Only backends that
	// say so (WorkspaceInspector) call it; one that could not get the
	// workspace (the sandbox failed before the program started) does not.
	Inspect func(root *os.File)

	// Limits bounds every resource the program may use.
	Limits Limits

	// SampleInterval, when positive, asks the backend to sample the CPU
	// time and memory of the run at this interval and report the samples
	// in Result.Samples. One sample is always taken at the end.
	SampleInterval time.Duration
}

// Mount makes a host path visible inside the sandbox.
type Mount struct {
	// Source is the absolute host path.
	Source string
	// Target is the absolute path inside the sandbox. Empty means Source.
	Target string
	// Writable makes the mount read-write. Toolchain mounts never are.
	Writable bool
}

// File is a regular file placed in the workspace before the program starts.
type File struct {
	// Path is relative to the workspace and may not leave it.
	Path    string
	Content []byte
	// Mode holds the permission bits; zero means 0644.
	Mode fs.FileMode
}

// SystemMounts are the read-only host paths every program needs, for the
// backends that bind the host's system: /usr and, where the host has them,
// the merged-/usr links at the root.
func SystemMounts() []Mount {
	ms := []Mount{{Source: "/usr"}}
	for _, p := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		if _, err := os.Lstat(p); err == nil {
			ms = append(ms, Mount{Source: p})
		}
	}
	return ms
}
