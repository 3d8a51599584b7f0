package runner

import "errors"

// errTooLarge is wrapped by copyOut when a compile step produced more than
// its limits allow.
var errTooLarge = errors.New("compiled program too large")

// copyLimits bound what copyOut takes out of a sandbox's workspace.
type copyLimits struct {
	maxBytes int64
	maxFiles int
	maxDepth int
}

// artifactLimits bound a compiled program.
var artifactLimits = copyLimits{maxBytes: 256 << 20, maxFiles: 4096, maxDepth: 16}

// seedLimits bound a Go build cache seed.
var seedLimits = copyLimits{maxBytes: 1 << 30, maxFiles: 20000, maxDepth: 4}
