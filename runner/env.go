package runner

import (
	"slices"
	"strings"

	"github.com/coderunner/coderunner/sandbox"
)

// baseEnv is the whole environment of a sandboxed step before its
// language adds to it (CONTRACT §10). Nothing of the caller's environment
// is passed on: it may hold tokens and host paths.
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + sandbox.WorkspaceDir,
	"TMPDIR=" + sandbox.TmpDir,
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
}

// environment returns baseEnv with each layer's KEY=value entries added in
// turn; a later entry replaces an earlier one of the same key. The order
// is stable, because it is part of the cache key.
func environment(layers ...[]string) []string {
	env := slices.Clone(baseEnv)
	for _, layer := range layers {
		for _, kv := range layer {
			key, _, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				continue
			}
			i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, key+"=") })
			if i >= 0 {
				env[i] = kv
			} else {
				env = append(env, kv)
			}
		}
	}
	return env
}
