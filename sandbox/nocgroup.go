package sandbox

import (
	"log/slog"
	"sync"
)

// NoCgroupPolicy is what a backend does about runs when it found no usable
// cgroup at its start: refuse each one (NoCgroupError), or, where rlimits
// alone were allowed (AllowRlimitsOnlyKey), let it go ahead and say so
// once in the log. The native and bwrap backends share it.
type NoCgroupPolicy struct {
	// cause is the cgroup detection's error; nil when cgroups are usable.
	cause error
	// refusal is the error every run gets, or nil.
	refusal error
	logged  sync.Once
}

// NewNoCgroupPolicy decides once, from the cgroup detection's error cause
// (nil: cgroups are usable) and the opt-out, and returns the warning a
// probe shows, if any.
func NewNoCgroupPolicy(cause error, allowRlimitsOnly bool) (*NoCgroupPolicy, string) {
	p := &NoCgroupPolicy{cause: cause}
	switch {
	case cause == nil:
		return p, ""
	case allowRlimitsOnly:
		return p, RlimitsOnlyWarning(cause)
	default:
		p.refusal = NoCgroupError(cause)
		return p, RefusedWarning
	}
}

// Refusal is the error every run gets, or nil when runs go ahead.
func (p *NoCgroupPolicy) Refusal() error { return p.refusal }

// Admit returns the refusal of a run, or nil; the first run let go ahead
// without cgroups logs that its limits are rlimits only.
func (p *NoCgroupPolicy) Admit(log *slog.Logger, backend string) error {
	if p.refusal != nil {
		return p.refusal
	}
	if p.cause != nil {
		p.logged.Do(func() {
			log.Warn("runs go ahead without cgroups", "event", "rlimits_only", "backend", backend, "reason", p.cause.Error())
		})
	}
	return nil
}

// Check is a probe's line on cgroups: usable, what describe says of them;
// else why there are none and what runs do about it.
func (p *NoCgroupPolicy) Check(describe func() string) Check {
	switch {
	case p.cause == nil:
		return Check{Name: "cgroups", OK: true, Detail: describe()}
	case p.refusal != nil:
		return Check{Name: "cgroups", OK: false, Detail: p.cause.Error() + "; every run is refused"}
	}
	return Check{Name: "cgroups", OK: false, Detail: p.cause.Error() + "; limits are per-process rlimits (backend.allow_rlimits_only)"}
}
