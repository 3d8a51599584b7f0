package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Version is the cgroup interface a Manager drives.
type Version int

const (
	// V1 is the legacy interface: one hierarchy per controller (or per set
	// of co-mounted controllers), each with its own directory tree.
	V1 Version = 1
	// V2 is the unified hierarchy: one tree, controllers enabled per level
	// through cgroup.subtree_control.
	V2 Version = 2
)

// String returns "v1" or "v2".
func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return fmt.Sprintf("Version(%d)", int(v))
}

// Limits are the resources a Group may use. A zero field leaves that
// resource unlimited.
type Limits struct {
	// Memory is the memory of every process in the group together, in
	// bytes, swap excluded: swap is turned off for the group.
	Memory int64
	// Processes is the number of processes and threads in the group.
	Processes int
	// CPUs is the CPU bandwidth in cores (1.5 is one and a half cores).
	CPUs float64
}

// Stats is what a Group has used so far.
type Stats struct {
	// CPU is the user plus system CPU time of every process that ran in the
	// group, including those that already exited.
	CPU time.Duration
	// Memory is the memory the group uses now, in bytes.
	Memory int64
	// PeakMemory is the most memory the group used at once, in bytes. On a
	// v2 kernel without memory.peak (before 5.19) it is the largest Memory
	// seen by any Stats call.
	PeakMemory int64
	// OOMKills is the number of processes the kernel's OOM killer killed
	// because the group reached its memory limit.
	OOMKills int
}

// Options tell Detect where to look. The zero value fits a normal process.
type Options struct {
	// MountInfo is the mount table to read, default /proc/self/mountinfo.
	MountInfo string
	// SelfCgroup is our own cgroup membership, default /proc/self/cgroup.
	SelfCgroup string
	// Prefix is the subdirectory of our own cgroup, in every hierarchy,
	// that holds the run groups. Default "coderunner".
	Prefix string
	// Root is prepended to every mount point read from MountInfo. It is
	// empty in production; tests point it at a temporary directory that
	// stands in for cgroupfs.
	Root string

	// hooks let tests stand regular files in for cgroupfs; nil in
	// production.
	hooks *hooks
}

// hooks replace the places where cgroupfs behaves unlike a regular file
// system: mkdir creates control files, rmdir removes a directory that
// still lists them, and a process written to one cgroup.procs leaves
// another.
type hooks struct {
	// populate runs after each mkdir, with the controllers of the
	// hierarchy (nil on v2).
	populate func(dir string, controllers []string) error
	// rmdir replaces rmdir(2).
	rmdir func(dir string) error
	// move replaces the write of pid to the cgroup.procs of the group at
	// to, which takes the process out of the group at from.
	move func(from, to int, pid []byte) error
}

func (o Options) withDefaults() Options {
	if o.MountInfo == "" {
		o.MountInfo = "/proc/self/mountinfo"
	}
	if o.SelfCgroup == "" {
		o.SelfCgroup = "/proc/self/cgroup"
	}
	if o.Prefix == "" {
		o.Prefix = "coderunner"
	}
	return o
}

// maxNameLen bounds group names well below NAME_MAX so that a prefix or
// suffix added later still fits.
const maxNameLen = 128

// validateName checks that name is a single, harmless path element: it is
// joined to cgroupfs paths of a process running as root.
func validateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > maxNameLen:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidName, len(name), maxNameLen)
	case name[0] == '.':
		// Covers "." and ".." and keeps run groups apart from hidden
		// entries.
		return fmt.Errorf("%w: %q begins with a dot", ErrInvalidName, name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		return !ok
	}); i >= 0 {
		return fmt.Errorf("%w: %q has %q at byte %d (allowed: letters, digits, '-', '_', '.')", ErrInvalidName, name, name[i], i)
	}
	return nil
}

// cpuPeriod is the CFS period in microseconds for every group: the kernel
// default, short enough that a quota below one core throttles smoothly.
const cpuPeriod = 100000

// cpuQuota converts a number of cores to a CFS quota in microseconds per
// cpuPeriod. The kernel refuses quotas under 1 ms, so smaller requests are
// raised to it.
func cpuQuota(cpus float64) (int64, error) {
	if cpus < 0 || cpus != cpus || cpus > 1<<20 {
		return 0, fmt.Errorf("invalid CPUs %g: must be a non-negative number of cores", cpus)
	}
	q := int64(cpus*cpuPeriod + 0.5)
	return max(q, 1000), nil
}

func validateLimits(l Limits) error {
	if l.Memory < 0 {
		return fmt.Errorf("invalid Memory %d: must not be negative", l.Memory)
	}
	if l.Processes < 0 {
		return fmt.Errorf("invalid Processes %d: must not be negative", l.Processes)
	}
	if _, err := cpuQuota(l.CPUs); err != nil {
		return err
	}
	return nil
}

// DetectWritable is Detect, then a group named probe created and removed:
// a hierarchy can be there and still not be ours to write (an
// unprivileged user, no delegation), which a backend finds out once, at
// start, rather than in every run.
func DetectWritable(opts Options, probe string) (*Manager, error) {
	m, err := Detect(opts)
	if err != nil {
		return nil, err
	}
	g, err := m.Create(probe, Limits{})
	if errors.Is(err, os.ErrPermission) {
		// The hierarchy is there, the directory for run groups too (made
		// by another user), but not ours to write.
		hint := ""
		if m.version == V2 {
			hint = "; " + delegateHint(filepath.Dir(m.hiers[0].base))
		}
		return nil, fmt.Errorf("%w: %w (the cgroup is not delegated to uid %d)%s", ErrUnavailable, err, os.Geteuid(), hint)
	}
	if err != nil {
		return nil, err
	}
	if err := g.Destroy(); err != nil {
		return nil, err
	}
	return m, nil
}
