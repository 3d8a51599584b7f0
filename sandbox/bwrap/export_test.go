package bwrap

// WithAlternatives returns opts for a backend that binds the host
// directory dir at /etc/alternatives instead of the host's own.
func WithAlternatives(opts Options, dir string) Options {
	opts.alternatives = dir
	return opts
}
