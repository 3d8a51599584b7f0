package seccomp

import "errors"

// ErrUnsupportedArch is returned when no filter exists for the requested
// architecture. Running user code without the filter would silently drop a
// layer of the sandbox, so callers must treat this as a failure to isolate.
var ErrUnsupportedArch = errors.New("unsupported architecture")
