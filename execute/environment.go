package execute

import (
	"slices"
	"strings"

	"github.com/coderunner/coderunner/sandbox"
)

// BaseEnvironment is the whole environment of user code before its
// language recipe adds to it. Nothing of the caller's environment is
// passed on: it may hold tokens (INTERNAL_API_TOKEN) and paths of the
// host.
var BaseEnvironment = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + sandbox.WorkspaceDir,
	"TMPDIR=" + sandbox.TmpDir,
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
}

// Environment returns BaseEnvironment with the recipe's KEY=value entries
// added; an entry of the recipe replaces a base entry of the same key (a
// recipe's PATH names where its compiler's helpers are). Entries without
// "=" are dropped. The order is stable: base keys first, then the
// recipe's new keys in its order.
func Environment(recipe []string) []string {
	env := slices.Clone(BaseEnvironment)
	for _, kv := range recipe {
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
	return env
}
