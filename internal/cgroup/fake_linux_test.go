package cgroup

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// v2Files are the files a v2 group directory holds, with a new group's
// contents.
var v2Files = map[string]string{
	"cgroup.procs":           "",
	"cgroup.kill":            "",
	"cgroup.freeze":          "0\n",
	"cgroup.events":          "populated 0\nfrozen 0\n",
	"cgroup.controllers":     "cpu memory pids\n",
	"cgroup.subtree_control": "",
	"memory.max":             "max\n",
	"memory.swap.max":        "max\n",
	"memory.current":         "0\n",
	"memory.peak":            "0\n",
	"memory.events":          "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
	"pids.max":               "max\n",
	"cpu.max":                "max 100000\n",
	"cpu.weight":             "100\n",
	"cpu.stat":               "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
}

// v1Files are the files of a v1 group directory, per controller.
var v1Files = map[string]map[string]string{
	"memory": {
		"memory.limit_in_bytes":       "9223372036854771712\n",
		"memory.memsw.limit_in_bytes": "9223372036854771712\n",
		"memory.swappiness":           "60\n",
		"memory.usage_in_bytes":       "0\n",
		"memory.max_usage_in_bytes":   "0\n",
		"memory.failcnt":              "0\n",
		"memory.oom_control":          "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
	},
	"pids":    {"pids.max": "max\n"},
	"cpu":     {"cpu.cfs_period_us": "100000\n", "cpu.cfs_quota_us": "-1\n", "cpu.shares": "1024\n"},
	"cpuacct": {"cpuacct.usage": "0\n"},
	"freezer": {"freezer.state": "THAWED\n"},
}

// fakeTree stands a temporary directory of regular files in for cgroupfs.
type fakeTree struct {
	t    testing.TB
	root string
	// omit names control files this kernel lacks.
	omit map[string]bool
}

func newFakeTree(t testing.TB, omit ...string) *fakeTree {
	f := &fakeTree{t: t, root: t.TempDir(), omit: map[string]bool{}}
	for _, o := range omit {
		f.omit[o] = true
	}
	return f
}

// files returns the files a new group of a hierarchy with controllers has
// (nil controllers: v2).
func (f *fakeTree) files(controllers []string) map[string]string {
	out := map[string]string{}
	if controllers == nil {
		maps.Copy(out, v2Files)
	} else {
		out["cgroup.procs"] = ""
		out["tasks"] = ""
		for _, c := range controllers {
			maps.Copy(out, v1Files[c])
		}
	}
	for o := range f.omit {
		delete(out, o)
	}
	return out
}

func (f *fakeTree) populate(dir string, controllers []string) error {
	for name, content := range f.files(controllers) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeTree) rmdir(dir string) error {
	if _, err := os.Lstat(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// move takes pid out of the cgroup.procs of the group at the descriptor
// from and adds it to that of to.
func (f *fakeTree) move(from, to int, pid []byte) error {
	dir := func(fd int) (string, error) { return os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)) }
	src, err := dir(from)
	if err != nil {
		return err
	}
	dst, err := dir(to)
	if err != nil {
		return err
	}
	var kept []string
	data, err := os.ReadFile(filepath.Join(src, "cgroup.procs"))
	if err != nil {
		return err
	}
	for p := range strings.FieldsSeq(string(data)) {
		if p != string(pid) {
			kept = append(kept, p)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "cgroup.procs"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		return err
	}
	procs, err := os.OpenFile(filepath.Join(dst, "cgroup.procs"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(procs, "%s\n", pid)
	return errors.Join(err, procs.Close())
}

// options returns Options reading the fixture in testdata/name and
// rooted in the fake tree.
func (f *fakeTree) options(fixture string) Options {
	return Options{
		MountInfo:  filepath.Join("testdata", fixture, "mountinfo"),
		SelfCgroup: filepath.Join("testdata", fixture, "cgroup"),
		Root:       f.root,
		hooks:      &hooks{populate: f.populate, rmdir: f.rmdir, move: f.move},
	}
}

// mkcgroup creates the directory of an existing cgroup (path relative to
// the fake root) with the files of a hierarchy with controllers, and
// extra files on top.
func (f *fakeTree) mkcgroup(path string, controllers []string, extra map[string]string) string {
	f.t.Helper()
	dir := filepath.Join(f.root, path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := f.populate(dir, controllers); err != nil {
		f.t.Fatal(err)
	}
	for name, content := range extra {
		f.write(filepath.Join(path, name), content)
	}
	return dir
}

func (f *fakeTree) write(path, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.root, path), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeTree) read(path string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root, path))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// dirFiles returns the contents of every file in a directory of the tree.
func (f *fakeTree) dirFiles(path string) map[string]string {
	f.t.Helper()
	entries, err := os.ReadDir(filepath.Join(f.root, path))
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			out[e.Name()] = f.read(filepath.Join(path, e.Name()))
		}
	}
	return out
}

func (f *fakeTree) exists(path string) bool {
	_, err := os.Lstat(filepath.Join(f.root, path))
	return err == nil
}

// v2Tree is a fake pure-v2 machine (testdata/v2) with our cgroup in
// place, delegated.
func v2Tree(t testing.TB, omit ...string) (*fakeTree, Options) {
	f := newFakeTree(t, omit...)
	f.mkcgroup("sys/fs/cgroup/system.slice/coderunner.service", nil, map[string]string{
		"cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
		"cgroup.procs":       "4242\n",
	})
	return f, f.options("v2")
}

// v1Dirs are our own cgroups in testdata/v1-comount, per controller.
var v1Dirs = map[string]string{
	"memory":  "sys/fs/cgroup/memory/system.slice/coderunner.service",
	"pids":    "sys/fs/cgroup/pids/system.slice/coderunner.service",
	"cpu":     "sys/fs/cgroup/cpu,cpuacct/system.slice/coderunner.service",
	"cpuacct": "sys/fs/cgroup/cpu,cpuacct/system.slice/coderunner.service",
	"freezer": "sys/fs/cgroup/freezer",
}

// v1Tree is a fake v1 machine with cpu and cpuacct co-mounted
// (testdata/v1-comount).
func v1Tree(t testing.TB, omit ...string) (*fakeTree, Options) {
	f := newFakeTree(t, omit...)
	for _, c := range slices.Sorted(maps.Keys(v1Dirs)) {
		f.mkcgroup(v1Dirs[c], []string{c}, nil)
	}
	return f, f.options("v1-comount")
}
