package sandbox

import (
	"os"
	"path/filepath"
)

// AlternativesDir is where Debian's alternatives system keeps its links
// (/usr/lib/x86_64-linux-gnu/libblas.so.3 -> /etc/alternatives/libblas.so.3-x86_64-linux-gnu
// -> /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3): without it
// numpy, and so matplotlib, cannot load its BLAS, and /usr/bin/cc or
// /usr/bin/java lead nowhere.
//
// The backends that bind the host's system (native, bwrap) bind the
// host's directory here read-only, nosuid and nodev (native also noexec).
// What it shows is the list of the alternatives installed, the packages'
// own public choices, and no secret. Its links resolve inside the
// sandbox's own root: a link to /etc/shadow or to a host path outside the
// mounted system finds nothing, and one into /usr finds the sandbox's
// read-only /usr.
const AlternativesDir = "/etc/alternatives"

// HostAlternatives returns dir, the links of its parents resolved, when it
// is a directory of its own on the host (not a link, which could lead to
// any directory), and "" when it is missing or anything else: then the
// sandbox has no /etc/alternatives.
func HostAlternatives(dir string) string {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	return real
}
