package native

// WithHostTreeAttached returns opts for a backend whose sandboxes keep the
// host's tree attached until their second phase is done, the path taken on
// kernels before Linux 6.15.
func WithHostTreeAttached(opts Options) Options {
	opts.keepHostAttached = true
	return opts
}
