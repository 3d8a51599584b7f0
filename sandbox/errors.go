package sandbox

import (
	"errors"
	"fmt"
)

// Error classes returned by backends. Callers test them with errors.Is.
var (
	// ErrInvalidSpec: the spec is malformed or a limit is out of range.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrUnavailable: the backend cannot work on this machine.
	ErrUnavailable = errors.New("sandbox backend unavailable")
	// ErrSetup: the sandbox could not be prepared or the program could not
	// be started (for example its interpreter is missing).
	ErrSetup = errors.New("sandbox setup failed")
	// ErrNoCgroup: the backend has no usable cgroup here, so a run's
	// memory, process and CPU limits cannot hold for its whole process
	// tree, and the run was refused because the caller did not accept
	// per-process rlimits instead (AllowRlimitsOnlyKey). It comes wrapped
	// with ErrUnavailable and the reason.
	ErrNoCgroup = errors.New("no usable cgroup")
)

// AllowRlimitsOnlyKey names the opt-out from ErrNoCgroup everywhere it
// can be set: the configuration key, its environment variable and the
// command line's flag.
const AllowRlimitsOnlyKey = "backend.allow_rlimits_only: true (CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true, --allow-rlimits-only)"

// NoCgroupError is the error of a run refused for want of a usable cgroup:
// it wraps ErrUnavailable and ErrNoCgroup, and names the cause (the cgroup
// detection's error) and the two ways out.
func NoCgroupError(cause error) error {
	return fmt.Errorf("%w: %w, so a run's memory, process and CPU limits cannot hold for its whole process tree (%w); "+
		"delegate a cgroup to this user as that says, or accept per-process rlimits instead with %s",
		ErrUnavailable, ErrNoCgroup, cause, AllowRlimitsOnlyKey)
}

// RlimitsOnlyWarning is the warning of a backend that, allowed to, runs
// without a usable cgroup (cause).
func RlimitsOnlyWarning(cause error) string {
	return fmt.Sprintf("no usable cgroup (%v): memory, process and CPU limits are enforced with rlimits only, per process and not per tree (allowed by backend.allow_rlimits_only)", cause)
}

// RefusedWarning is the warning of a backend that refuses every run for
// want of a usable cgroup; the cgroups check says why there is none.
const RefusedWarning = "no usable cgroup: every run is refused, since its memory, process and CPU limits cannot hold for its whole process tree; delegate a cgroup to this user (see the cgroups check), or accept per-process rlimits with " + AllowRlimitsOnlyKey
