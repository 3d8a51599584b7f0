package sandbox

import (
	"fmt"
	"time"
)

// Limits bounds the resources of one run. A zero field takes the value of
// DefaultLimits; every limit is always enforced.
type Limits struct {
	// WallTime is the elapsed real time the program may run.
	WallTime time.Duration
	// CPUTime is the user+system CPU time of the whole process tree.
	CPUTime time.Duration
	// Memory is the memory of the whole process tree in bytes, swap
	// excluded (swap is off inside the sandbox).
	Memory int64
	// CPUs is the CPU bandwidth in cores (0.5 is half a core).
	CPUs float64
	// Processes is the number of processes and threads of the tree.
	Processes int
	// OutputBytes caps stdout and stderr, each on its own. A program that
	// writes more is stopped and its output truncated at the cap.
	OutputBytes int64
	// FileSize is the largest file the program may write (RLIMIT_FSIZE).
	FileSize int64
	// OpenFiles is the number of open file descriptors per process.
	OpenFiles int
	// WorkspaceSize caps the private workspace.
	WorkspaceSize int64
	// TmpSize caps /tmp.
	TmpSize int64
}

// Byte multiples for limits.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// DefaultLimits are the limits a zero Limits field takes: those of a
// single run that names none.
var DefaultLimits = Limits{
	WallTime:      30 * time.Second,
	CPUTime:       30 * time.Second,
	Memory:        256 * MiB,
	CPUs:          0.5,
	Processes:     50,
	OutputBytes:   100000,
	FileSize:      256 * MiB,
	OpenFiles:     256,
	WorkspaceSize: 256 * MiB,
	TmpSize:       64 * MiB,
}

// WithDefaults returns l with every zero field replaced by its default.
func (l Limits) WithDefaults() Limits { return DefaultLimits.Overlay(l) }

// Overlay returns l with every non-zero field of o put over it.
func (l Limits) Overlay(o Limits) Limits {
	if o.WallTime != 0 {
		l.WallTime = o.WallTime
	}
	if o.CPUTime != 0 {
		l.CPUTime = o.CPUTime
	}
	if o.Memory != 0 {
		l.Memory = o.Memory
	}
	if o.CPUs != 0 {
		l.CPUs = o.CPUs
	}
	if o.Processes != 0 {
		l.Processes = o.Processes
	}
	if o.OutputBytes != 0 {
		l.OutputBytes = o.OutputBytes
	}
	if o.FileSize != 0 {
		l.FileSize = o.FileSize
	}
	if o.OpenFiles != 0 {
		l.OpenFiles = o.OpenFiles
	}
	if o.WorkspaceSize != 0 {
		l.WorkspaceSize = o.WorkspaceSize
	}
	if o.TmpSize != 0 {
		l.TmpSize = o.TmpSize
	}
	return l
}

// Hard bounds on what any request may ask for, whatever the caller's own
// validation allows.
const (
	MaxWallTime    = time.Hour
	MaxMemory      = 64 * GiB
	MaxProcesses   = 4096
	MaxOutputBytes = 1 * GiB
	MaxOpenFiles   = 65536
	MaxDiskBytes   = 16 * GiB
	minMemory      = 4 * MiB
	minOpenFiles   = 16
)

// Validate reports the first limit that is out of range, naming its field.
// It expects limits that went through WithDefaults.
func (l Limits) Validate() error {
	switch {
	case l.WallTime <= 0 || l.WallTime > MaxWallTime:
		return fmt.Errorf("%w: WallTime %v must be in (0, %v]", ErrInvalidSpec, l.WallTime, MaxWallTime)
	case l.CPUTime <= 0 || l.CPUTime > MaxWallTime:
		return fmt.Errorf("%w: CPUTime %v must be in (0, %v]", ErrInvalidSpec, l.CPUTime, MaxWallTime)
	case l.Memory < minMemory || l.Memory > MaxMemory:
		return fmt.Errorf("%w: Memory %d bytes must be in [%d, %d]", ErrInvalidSpec, l.Memory, minMemory, MaxMemory)
	case l.CPUs <= 0 || l.CPUs > 1024:
		return fmt.Errorf("%w: CPUs %g must be in (0, 1024]", ErrInvalidSpec, l.CPUs)
	case l.Processes < 1 || l.Processes > MaxProcesses:
		return fmt.Errorf("%w: Processes %d must be in [1, %d]", ErrInvalidSpec, l.Processes, MaxProcesses)
	case l.OutputBytes < 1 || l.OutputBytes > MaxOutputBytes:
		return fmt.Errorf("%w: OutputBytes %d must be in [1, %d]", ErrInvalidSpec, l.OutputBytes, MaxOutputBytes)
	case l.FileSize < 1 || l.FileSize > MaxDiskBytes:
		return fmt.Errorf("%w: FileSize %d must be in [1, %d]", ErrInvalidSpec, l.FileSize, MaxDiskBytes)
	case l.OpenFiles < minOpenFiles || l.OpenFiles > MaxOpenFiles:
		return fmt.Errorf("%w: OpenFiles %d must be in [%d, %d]", ErrInvalidSpec, l.OpenFiles, minOpenFiles, MaxOpenFiles)
	case l.WorkspaceSize < MiB || l.WorkspaceSize > MaxDiskBytes:
		return fmt.Errorf("%w: WorkspaceSize %d must be in [%d, %d]", ErrInvalidSpec, l.WorkspaceSize, MiB, MaxDiskBytes)
	case l.TmpSize < MiB || l.TmpSize > MaxDiskBytes:
		return fmt.Errorf("%w: TmpSize %d must be in [%d, %d]", ErrInvalidSpec, l.TmpSize, MiB, MaxDiskBytes)
	}
	return nil
}
