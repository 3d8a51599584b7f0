package lang

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// DiscoveryTimeout bounds the discovery of one toolchain, commands
// included. Discovery does not stop when the caller's context is
// cancelled, because its result is shared by every later caller.
const DiscoveryTimeout = 20 * time.Second

// commandTimeout bounds one host command (a version or root query).
const commandTimeout = 10 * time.Second

// maxWalk bounds the entries of a toolchain root scanned for links.
const maxWalk = 200000

// Toolchain is what discovery found about a language on this machine.
type Toolchain struct {
	// Available tells whether programs of the language can be built and run.
	Available bool
	// Reason says why the toolchain is unavailable, or is empty.
	Reason string
	// Version is the first line the version command printed.
	Version string
}

// discovered is the shared result of one discovery.
type discovered struct {
	tc         Toolchain
	tool, root string // sandbox paths
	mounts     []sandbox.Mount
	env        []string
}

type cacheEntry struct {
	once sync.Once
	d    *discovered
}

// discoveries caches results per recipe and host PATH, so that tables
// built from the same recipes share them: a process discovers each
// toolchain at most once.
var discoveries sync.Map // string -> *cacheEntry

// Discover finds the language's toolchain on the host, fills in Env and
// Mounts, and reports whether the language is available. It runs once per
// language and process; later calls return the cached result.
func (l *Language) Discover(ctx context.Context) Toolchain {
	l.once.Do(func() {
		getenv := l.getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		key, _ := json.Marshal([]any{l.Recipe.Toolchain, l.Recipe.Version, l.Recipe.Mounts, l.Recipe.Env, l.baseMounts, getenv("PATH")})
		e, _ := discoveries.LoadOrStore(string(key), &cacheEntry{})
		entry := e.(*cacheEntry)
		entry.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DiscoveryTimeout)
			defer cancel()
			entry.d = discover(ctx, &l.Recipe, l.baseMounts, getenv, l.staticTool, l.staticRoot)
		})
		d := entry.d
		l.Mounts = append([]sandbox.Mount(nil), d.mounts...)
		l.Env = append([]string(nil), d.env...)
		l.disc.Store(d)
	})
	return l.disc.Load().tc
}

// discover does the work of Discover.
func discover(ctx context.Context, r *Recipe, base []string, getenv func(string) string, staticTool, staticRoot string) *discovered {
	d := &discovered{tool: staticTool, root: staticRoot}
	for _, b := range base {
		if _, err := os.Lstat(b); err == nil {
			d.mounts = append(d.mounts, sandbox.Mount{Source: b, Target: b})
		}
	}
	err := d.find(ctx, r, base, getenv)
	d.env = expandEnv(r.Env, d.tool, d.root)
	if err != nil {
		d.tc = Toolchain{Reason: err.Error()}
		return d
	}
	d.tc.Available = true
	return d
}

// find locates the toolchain and records its mounts, sandbox paths and
// version in d.
func (d *discovered) find(ctx context.Context, r *Recipe, base []string, getenv func(string) string) error {
	tc := &r.Toolchain
	visible := func(p string) bool {
		for _, b := range base {
			if under(p, b) {
				return true
			}
		}
		return false
	}
	var hostTool, hostRoot string
	if tc.Program != "" || len(tc.Paths) > 0 {
		var err error
		if hostTool, hostRoot, err = locate(ctx, tc, getenv); err != nil {
			return err
		}
		if tc.Mount != "" {
			rel, _ := filepath.Rel(hostRoot, hostTool)
			d.root, d.tool = tc.Mount, filepath.Join(tc.Mount, rel)
			mounts, err := rootMounts(hostRoot, tc.Mount, d.mounts)
			if err != nil {
				return err
			}
			d.mounts = append(d.mounts, mounts...)
		} else {
			if !visible(hostTool) {
				return fmt.Errorf("%s is not visible in the sandbox: set toolchain.mount", hostTool)
			}
			d.root, d.tool = hostRoot, hostTool
		}
	}
	for _, p := range tc.Requires {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("needs %s: %w", p, err)
		}
		if !visible(p) {
			return fmt.Errorf("needs %s, which is not visible in the sandbox", p)
		}
	}
	for _, m := range r.Mounts {
		if _, err := os.Stat(m.Source); err != nil {
			return fmt.Errorf("mount source: %w", err)
		}
		t := m.Target
		if t == "" {
			t = m.Source
		}
		d.mounts = append(d.mounts, sandbox.Mount{Source: m.Source, Target: t})
	}
	if tc.FollowLinks && hostRoot != "" {
		for _, dir := range linkedDirs(hostRoot, visible) {
			d.mounts = append(d.mounts, sandbox.Mount{Source: dir, Target: dir})
		}
	}
	if len(r.Version) > 0 {
		argv := expandAll(r.Version, strings.NewReplacer("{host_tool}", hostTool, "{host_root}", hostRoot))
		out, err := runHost(ctx, argv)
		if err != nil {
			return fmt.Errorf("version check %s failed: %w", strings.Join(argv, " "), err)
		}
		d.tc.Version = firstLine(out)
	}
	return nil
}

// locate finds the toolchain on the host: the real path of its tool and
// the root directory that holds it ("" when the recipe names none).
func locate(ctx context.Context, tc *Discovery, getenv func(string) string) (hostTool, hostRoot string, err error) {
	found, real, err := findProgram(tc, getenv)
	if err != nil {
		return "", "", err
	}
	hostTool = real
	switch {
	case tc.RootUp > 0:
		hostRoot = real
		for range tc.RootUp {
			hostRoot = filepath.Dir(hostRoot)
		}
	case len(tc.RootCommand) > 0:
		argv := expandAll(tc.RootCommand, strings.NewReplacer("{host_program}", found))
		out, err := runHost(ctx, argv)
		if err != nil {
			return "", "", fmt.Errorf("cannot find the toolchain root: %s: %w", strings.Join(argv, " "), err)
		}
		hostRoot = strings.TrimSpace(firstLine(out))
		if !filepath.IsAbs(hostRoot) {
			return "", "", fmt.Errorf("%s printed %q, not an absolute path", strings.Join(argv, " "), hostRoot)
		}
	}
	if hostRoot == "" {
		return hostTool, "", nil
	}
	if hostRoot, err = filepath.EvalSymlinks(hostRoot); err != nil {
		return "", "", fmt.Errorf("toolchain root: %w", err)
	}
	if hostRoot == "/" {
		return "", "", fmt.Errorf("toolchain root of %s is /", real)
	}
	if tc.Tool != "" {
		p, err := filepath.EvalSymlinks(filepath.Join(hostRoot, tc.Tool))
		if err != nil {
			return "", "", fmt.Errorf("%s not found in the toolchain root: %w", tc.Tool, err)
		}
		if err := realBinary(p); err != nil {
			return "", "", fmt.Errorf("%s at %s %w", tc.Tool, p, err)
		}
		hostTool = p
	}
	if !under(hostTool, hostRoot) {
		return "", "", fmt.Errorf("%s is outside its toolchain root %s", hostTool, hostRoot)
	}
	return hostTool, hostRoot, nil
}

// findProgram looks for a real binary among the recipe's paths, then in
// the host PATH. found is the path as found, which a proxy needs to know
// its name by; real has its links resolved.
func findProgram(tc *Discovery, getenv func(string) string) (found, real string, err error) {
	cands := append([]string(nil), tc.Paths...)
	name := tc.Program
	if name != "" {
		for _, dir := range filepath.SplitList(getenv("PATH")) {
			// A relative PATH entry would depend on our working directory.
			if filepath.IsAbs(dir) {
				cands = append(cands, filepath.Join(dir, name))
			}
		}
	} else {
		name = filepath.Base(tc.Paths[0])
	}
	var rejected []string
	for _, c := range cands {
		real, err := filepath.EvalSymlinks(c)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = realBinary(real)
		}
		if err != nil {
			rejected = append(rejected, fmt.Sprintf("%s at %s %v", name, c, err))
			continue
		}
		return c, real, nil
	}
	if len(rejected) > 0 {
		return "", "", errors.New(strings.Join(rejected, "; "))
	}
	return "", "", fmt.Errorf("%s not found", name)
}

// realBinary accepts an executable ELF file. Shell-script shims (pyenv,
// asdf) are refused: they depend on the host's home directory and
// environment, which the sandbox does not have.
func realBinary(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("is not executable")
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return errors.New("is not an ELF binary")
	}
	switch {
	case bytes.Equal(magic, []byte("\x7fELF")):
		return nil
	case bytes.HasPrefix(magic, []byte("#!")):
		return errors.New("is a script, not a real binary (a shim?)")
	}
	return errors.New("is not an ELF binary")
}

// linkedDirs lists the directories that absolute symbolic links inside
// root point to, outside root and outside the base mounts, with nested
// directories folded into their ancestors. Nothing under /root or /home
// is listed: it would appear at its own path.
func linkedDirs(root string, visible func(string) bool) []string {
	var dirs []string
	walkLinks(root, func(_, t string) {
		if !filepath.IsAbs(t) {
			return
		}
		t = filepath.Clean(t)
		if under(t, root) || visible(t) || under(t, "/root") || under(t, "/home") {
			return
		}
		if _, err := os.Stat(t); err != nil {
			return
		}
		dirs = append(dirs, filepath.Dir(t))
	})
	sort.Strings(dirs)
	var out []string
	for _, d := range dirs {
		if len(out) > 0 && under(d, out[len(out)-1]) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// maxLinkMounts bounds the mounts added for one toolchain root's links.
const maxLinkMounts = 16

// rootMounts mounts the toolchain root at target. Relative symbolic links
// in the root that lead out of it (Debian's Go: /usr/lib/go-1.19/src is
// ../../share/go-1.19/src) would point nowhere at target: what each leads
// to on the host is also mounted, read-only, where the link expects it
// once the root is at target (/share/go-1.19/src for /opt/go/src), with
// nested ones folded into their ancestors. A link whose place is one the
// sandbox reserves (checkTarget), or another mount's, is left as it is.
// Only the host's toolchain tree is read, never a path a sandbox can
// write.
func rootMounts(root, target string, taken []sandbox.Mount) ([]sandbox.Mount, error) {
	mounts := []sandbox.Mount{{Source: root, Target: target}}
	taken = append(slices.Clip(taken), mounts...)
	var extra []sandbox.Mount
	for _, rel := range outboundLinks(root) {
		text, err := os.Readlink(filepath.Join(root, rel))
		if err != nil {
			continue
		}
		where := filepath.Join(target, filepath.Dir(rel), text)
		src, err := filepath.EvalSymlinks(filepath.Join(root, rel))
		if err != nil {
			continue // dangling on the host too
		}
		if checkTarget(where) != nil || slices.ContainsFunc(taken, func(m sandbox.Mount) bool {
			return under(where, m.TargetPath()) || under(m.TargetPath(), where)
		}) {
			continue
		}
		extra = append(extra, sandbox.Mount{Source: src, Target: where})
	}
	// Ancestors first, so that a nested link that the ancestor's mount
	// already shows is folded into it.
	slices.SortFunc(extra, func(a, b sandbox.Mount) int { return strings.Compare(a.Target, b.Target) })
	for _, m := range extra {
		folded := false
		for _, a := range mounts[1:] {
			if under(m.Target, a.Target) {
				// Shown by a, if a's tree holds the same thing there;
				// otherwise it cannot be mounted inside a's read-only
				// tree either.
				folded = true
				break
			}
		}
		if folded {
			continue
		}
		if len(mounts) > maxLinkMounts {
			return nil, fmt.Errorf("toolchain root %s: more than %d links lead out of it", root, maxLinkMounts)
		}
		mounts = append(mounts, m)
	}
	return mounts, nil
}

// outboundLinks lists, relative to root, the relative symbolic links in
// root that lead out of it.
func outboundLinks(root string) []string {
	var out []string
	walkLinks(root, func(p, t string) {
		if filepath.IsAbs(t) {
			return
		}
		rel, _ := filepath.Rel(root, p)
		if to := filepath.Join(filepath.Dir(rel), t); to == ".." || strings.HasPrefix(to, "../") {
			out = append(out, rel)
		}
	})
	return out
}

// walkLinks calls found with the path and the target of each symbolic
// link in root (never followed), for at most maxWalk entries.
func walkLinks(root string, found func(path, target string)) {
	n := 0
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		n++
		if err != nil || n > maxWalk {
			return filepath.SkipAll
		}
		if e.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if t, err := os.Readlink(p); err == nil {
			found(p, t)
		}
		return nil
	})
}

// runHost runs a discovery command on the host and returns its combined
// output.
func runHost(ctx context.Context, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// "/" holds no go.mod or rust-toolchain file that could make a
	// toolchain switch itself.
	cmd.Dir = "/"
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("timed out after %v", commandTimeout)
		}
		if l := firstLine(out.String()); l != "" {
			return "", fmt.Errorf("%w: %s", err, l)
		}
		return "", err
	}
	return out.String(), nil
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// firstLine is the first non-blank line of s, at most 200 bytes.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200]
			}
			return l
		}
	}
	return ""
}

func expandAll(argv []string, r *strings.Replacer) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}

func expandEnv(env []string, tool, root string) []string {
	return expandAll(env, strings.NewReplacer("{tool}", tool, "{root}", root, "{workspace}", sandbox.WorkspaceDir))
}
