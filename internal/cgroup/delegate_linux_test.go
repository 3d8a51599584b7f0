package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
)

// The tests below stand for an ordinary user, alice (uid 4242), on the
// fake hybrid machine (testdata/hybrid: memory in /process_api/..., the
// other controllers at the top of their hierarchies). They chown fixture
// files to her, so they need root.

const (
	aliceUID = 4242
	aliceGID = 4343
	otherUID = 4244
)

// hybridOwn are our own cgroups in testdata/hybrid, per controller.
var hybridOwn = map[string]string{
	"memory":  "sys/fs/cgroup/memory/process_api/32e0edd4a75fec01ceb0c14588f3a8db",
	"pids":    "sys/fs/cgroup/pids",
	"cpu":     "sys/fs/cgroup/cpu",
	"cpuacct": "sys/fs/cgroup/cpuacct",
	"freezer": "sys/fs/cgroup/freezer",
}

// asAlice makes Detect see this process as alice until the test ends.
func asAlice(t *testing.T, name string) {
	t.Helper()
	saved := currentIdentity
	currentIdentity = func() identity { return identity{uid: aliceUID, gids: []int{aliceGID}, name: name} }
	t.Cleanup(func() { currentIdentity = saved })
}

// hybridTree is the fake hybrid machine, every cgroup root's.
func hybridTree(t *testing.T) (*fakeTree, Options) {
	t.Helper()
	testutil.RequireRoot(t)
	f := newFakeTree(t)
	for c, dir := range hybridOwn {
		f.mkcgroup(dir, []string{c}, nil)
		// The tops of the hierarchies are cgroups too.
		top := filepath.Join("sys/fs/cgroup", c)
		f.mkcgroup(top, []string{c}, nil)
	}
	f.mkcgroup("sys/fs/cgroup/memory/process_api", []string{"memory"}, nil)
	return f, f.options("hybrid")
}

// delegate makes name at the top of each of controllers' hierarchies and
// chowns it and its files to uid (what root does: mkdir, chown -R).
func (f *fakeTree) delegate(name string, uid int, controllers ...string) {
	f.t.Helper()
	for _, c := range controllers {
		dir := f.mkcgroup(filepath.Join("sys/fs/cgroup", c, name), []string{c}, nil)
		f.chownR(dir, uid, aliceGID)
	}
}

func (f *fakeTree) chownR(dir string, uid, gid int) {
	f.t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

var allV1 = []string{"memory", "pids", "cpu", "cpuacct", "freezer"}

func TestDetectV1Delegated(t *testing.T) {
	f, opts := hybridTree(t)
	asAlice(t, "alice")
	f.delegate("coderunner-alice", aliceUID, allV1...)
	m, err := Detect(opts)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	idx := map[string]int{"memory": m.mem, "pids": m.pids, "cpu": m.cpu, "cpuacct": m.cpuacct, "freezer": m.freezer}
	for _, c := range allV1 {
		// memory is found above our own cgroup, at the top of its
		// hierarchy.
		want := filepath.Join(f.root, "sys/fs/cgroup", c, "coderunner-alice", "coderunner")
		if i := idx[c]; i < 0 || m.hiers[i].base != want {
			t.Errorf("%s: base %v, want %s", c, m.hiers, want)
		}
	}
}

func TestDetectV1DelegatedByUID(t *testing.T) {
	f, opts := hybridTree(t)
	asAlice(t, "")
	f.delegate("coderunner-4242", aliceUID, allV1...)
	m, err := Detect(opts)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	if want := filepath.Join(f.root, "sys/fs/cgroup/memory/coderunner-4242/coderunner"); m.hiers[m.mem].base != want {
		t.Errorf("memory base %s, want %s", m.hiers[m.mem].base, want)
	}
}

// TestDetectV1OwnCgroupDelegated: root moved alice into a cgroup of her
// own and chowned it; the groups go beneath it, as they do for root.
func TestDetectV1OwnCgroupDelegated(t *testing.T) {
	f, opts := hybridTree(t)
	asAlice(t, "alice")
	for _, c := range allV1 {
		f.chownR(filepath.Join(f.root, hybridOwn[c]), aliceUID, aliceGID)
	}
	m, err := Detect(opts)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	if want := filepath.Join(f.root, hybridOwn["memory"], "coderunner"); m.hiers[m.mem].base != want {
		t.Errorf("memory base %s, want %s", m.hiers[m.mem].base, want)
	}
}

// TestDetectV1FreezerNotDelegated: the freezer is optional; without it
// Kill signals the group's processes until none is left.
func TestDetectV1FreezerNotDelegated(t *testing.T) {
	f, opts := hybridTree(t)
	asAlice(t, "alice")
	f.delegate("coderunner-alice", aliceUID, "memory", "pids", "cpu", "cpuacct")
	m, err := Detect(opts)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	if m.freezer != -1 {
		t.Errorf("freezer hierarchy %d, want none", m.freezer)
	}
}

// TestDetectV1NotDelegated attacks the detection: each subtree below is
// not delegated to alice and must not be used, however writable it looks.
func TestDetectV1NotDelegated(t *testing.T) {
	mem := "sys/fs/cgroup/memory/coderunner-alice"
	tests := []struct {
		name    string
		setup   func(f *fakeTree)
		wantErr string
	}{
		{"none", func(*fakeTree) {}, "as root, delegate one: mkdir "},
		{"owned by another user", func(f *fakeTree) {
			f.delegate("coderunner-alice", otherUID, "memory")
		}, "belongs to uid 4244, not 4242"},
		{"owned by root, files all world-writable", func(f *fakeTree) {
			f.delegate("coderunner-alice", 0, "memory")
			chmodAll(f, mem, 0o666)
		}, "belongs to uid 0, not 4242"},
		{"cgroup.procs not hers", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory")
			lchown(f, mem+"/cgroup.procs", 0, 0)
		}, "cgroup.procs (uid 0, gid 0, mode -rw-r--r--) is not writable by uid 4242"},
		{"tasks not hers", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory")
			lchown(f, mem+"/tasks", 0, 0)
		}, "tasks (uid 0, gid 0, mode -rw-r--r--) is not writable by uid 4242"},
		{"cgroup.procs hers but read-only", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory")
			chmod(f, mem+"/cgroup.procs", 0o444)
		}, "cgroup.procs (uid 4242"},
		{"tasks her group's, group may not write", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory")
			lchown(f, mem+"/tasks", 0, aliceGID)
			chmod(f, mem+"/tasks", 0o646)
		}, "tasks (uid 0, gid 4343, mode -rw-r--rw-) is not writable"},
		{"cgroup.procs missing", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory")
			if err := os.Remove(filepath.Join(f.root, mem, "cgroup.procs")); err != nil {
				f.t.Fatal(err)
			}
		}, "cgroup.procs: lstat"},
		{"a link to a directory of hers", func(f *fakeTree) {
			f.delegate("coderunner-elsewhere", aliceUID, "memory")
			if err := os.Symlink("coderunner-elsewhere", filepath.Join(f.root, mem)); err != nil {
				f.t.Fatal(err)
			}
		}, "coderunner-alice is not a directory"},
		{"cgroup.procs a link to a file of hers", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory")
			p := filepath.Join(f.root, mem, "cgroup.procs")
			if err := os.Remove(p); err != nil {
				f.t.Fatal(err)
			}
			if err := os.Symlink("tasks", p); err != nil {
				f.t.Fatal(err)
			}
		}, "cgroup.procs is not a regular file"},
		{"memory delegated, pids not", func(f *fakeTree) {
			f.delegate("coderunner-alice", aliceUID, "memory", "cpu", "cpuacct")
		}, "cgroup v1 pids: our cgroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := hybridTree(t)
			asAlice(t, "alice")
			tt.setup(f)
			m, err := Detect(opts)
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Detect = %v, %v; want ErrUnavailable containing %q", m, err, tt.wantErr)
			}
			if f.exists(mem + "/coderunner") {
				t.Error("created the run groups' directory in a subtree not delegated")
			}
		})
	}
}

// TestDelegatedGroupWritable: a delegation through the group (chgrp,
// g+w) is one too.
func TestDelegatedGroupWritable(t *testing.T) {
	f, _ := hybridTree(t)
	f.delegate("coderunner-alice", aliceUID, "memory")
	dir := "sys/fs/cgroup/memory/coderunner-alice"
	for _, name := range []string{"cgroup.procs", "tasks"} {
		lchown(f, dir+"/"+name, 0, aliceGID)
		chmod(f, dir+"/"+name, 0o664)
	}
	id := identity{uid: aliceUID, gids: []int{1, aliceGID}}
	if err := delegated(filepath.Join(f.root, dir), id, V1); err != nil {
		t.Fatalf("delegated: %v", err)
	}
	id.gids = []int{1}
	if err := delegated(filepath.Join(f.root, dir), id, V1); err == nil {
		t.Fatal("delegated to a user not in the files' group")
	}
}

// TestDetectV1RootIgnoresDelegation: root keeps its groups beneath its
// own cgroup, whatever was delegated to users.
func TestDetectV1RootIgnoresDelegation(t *testing.T) {
	f, opts := hybridTree(t)
	saved := currentIdentity
	currentIdentity = func() identity { return identity{uid: 0, gids: []int{0}, name: "root"} }
	t.Cleanup(func() { currentIdentity = saved })
	f.delegate("coderunner-root", 0, allV1...)
	m, err := Detect(opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.root, hybridOwn["memory"], "coderunner"); m.hiers[m.mem].base != want {
		t.Errorf("memory base %s, want %s", m.hiers[m.mem].base, want)
	}
}

func TestDelegatedNames(t *testing.T) {
	tests := []struct {
		id   identity
		want string
	}{
		{identity{uid: 1000, name: "alice"}, "coderunner-alice coderunner-1000"},
		{identity{uid: 1000}, "coderunner-1000"},
		// A name that is no safe path element is never joined to a path.
		{identity{uid: 1000, name: "../../etc"}, "coderunner-1000"},
		{identity{uid: 1000, name: "a/b"}, "coderunner-1000"},
	}
	for _, tt := range tests {
		if got := strings.Join(delegatedNames(tt.id), " "); got != tt.want {
			t.Errorf("delegatedNames(%+v) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func lchown(f *fakeTree, path string, uid, gid int) {
	f.t.Helper()
	if err := os.Lchown(filepath.Join(f.root, path), uid, gid); err != nil {
		f.t.Fatal(err)
	}
}

func chmod(f *fakeTree, path string, mode os.FileMode) {
	f.t.Helper()
	if err := os.Chmod(filepath.Join(f.root, path), mode); err != nil {
		f.t.Fatal(err)
	}
}

func chmodAll(f *fakeTree, dir string, mode os.FileMode) {
	f.t.Helper()
	entries, err := os.ReadDir(filepath.Join(f.root, dir))
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range entries {
		chmod(f, filepath.Join(dir, e.Name()), mode)
	}
}
