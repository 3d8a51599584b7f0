package native

import "github.com/coderunner/coderunner/sandbox"

// WithHostTreeAttached returns opts for a backend whose sandboxes keep the
// host's tree attached until their second phase is done, the path taken on
// kernels before Linux 6.15.
func WithHostTreeAttached(opts Options) Options {
	opts.keepHostAttached = true
	return opts
}

// KeptInits returns the process ids of the inits ser keeps idle.
func KeptInits(ser sandbox.Series) []int {
	s := ser.(*series)
	s.mu.Lock()
	defer s.mu.Unlock()
	pids := make([]int, 0, len(s.idle))
	for _, k := range s.idle {
		pids = append(pids, k.sp.proc.Pid)
	}
	return pids
}
