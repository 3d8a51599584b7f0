package lang

import (
	"slices"
	"strings"

	"github.com/coderunner/coderunner/sandbox"
)

// BaseEnvironment is the whole environment of a sandboxed step (a compile
// or a run) before its language adds to it. Nothing of the caller's
// environment is passed on: it may hold tokens (INTERNAL_API_TOKEN) and
// paths of the host.
var BaseEnvironment = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + sandbox.WorkspaceDir,
	"TMPDIR=" + sandbox.TmpDir,
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
}

// Environment returns BaseEnvironment with each layer's KEY=value entries
// added in turn; an entry replaces an earlier one of the same key (a
// recipe's PATH names where its compiler's helpers are). Entries without
// "=" are dropped. The order is stable, base keys first, then new keys in
// the order they came, since it is part of the compile cache's key.
func Environment(layers ...[]string) []string {
	env := slices.Clone(BaseEnvironment)
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
