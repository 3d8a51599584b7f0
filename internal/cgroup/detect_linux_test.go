package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	const hybridMem = "sys/fs/cgroup/memory/process_api/32e0edd4a75fec01ceb0c14588f3a8db"
	tests := []struct {
		name    string
		fixture string
		// own are the cgroups we are in, relative to the fake root, with
		// the controllers of their hierarchy (nil: v2).
		own     map[string][]string
		version Version
		// bases are the expected run directories per controller, relative
		// to the fake root.
		bases map[string]string
	}{
		{
			name:    "pure v2",
			fixture: "v2",
			own:     map[string][]string{"sys/fs/cgroup/system.slice/coderunner.service": nil},
			version: V2,
			bases: map[string]string{
				"memory": "sys/fs/cgroup/system.slice/coderunner.service/coderunner",
			},
		},
		{
			name:    "hybrid, memory in a non-root v1 cgroup, separate cpu and cpuacct",
			fixture: "hybrid",
			own: map[string][]string{
				hybridMem:               {"memory"},
				"sys/fs/cgroup/pids":    {"pids"},
				"sys/fs/cgroup/cpu":     {"cpu"},
				"sys/fs/cgroup/cpuacct": {"cpuacct"},
				"sys/fs/cgroup/freezer": {"freezer"},
				"sys/fs/cgroup/unified": nil,
			},
			version: V1,
			bases: map[string]string{
				"memory":  hybridMem + "/coderunner",
				"pids":    "sys/fs/cgroup/pids/coderunner",
				"cpu":     "sys/fs/cgroup/cpu/coderunner",
				"cpuacct": "sys/fs/cgroup/cpuacct/coderunner",
				"freezer": "sys/fs/cgroup/freezer/coderunner",
			},
		},
		{
			name:    "v1 with cpu,cpuacct co-mounted",
			fixture: "v1-comount",
			own: map[string][]string{
				v1Dirs["memory"]:  {"memory"},
				v1Dirs["pids"]:    {"pids"},
				v1Dirs["cpu"]:     {"cpu", "cpuacct"},
				v1Dirs["freezer"]: {"freezer"},
			},
			version: V1,
			bases: map[string]string{
				"memory":  v1Dirs["memory"] + "/coderunner",
				"pids":    v1Dirs["pids"] + "/coderunner",
				"cpu":     v1Dirs["cpu"] + "/coderunner",
				"cpuacct": v1Dirs["cpu"] + "/coderunner",
				"freezer": v1Dirs["freezer"] + "/coderunner",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTree(t)
			for dir, ctrls := range tt.own {
				f.mkcgroup(dir, ctrls, nil)
			}
			m, err := Detect(f.options(tt.fixture))
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if m.Version() != tt.version {
				t.Errorf("Version = %v, want %v", m.Version(), tt.version)
			}
			idx := map[string]int{"memory": m.mem, "pids": m.pids, "cpu": m.cpu, "cpuacct": m.cpuacct, "freezer": m.freezer}
			if tt.version == V2 {
				if len(m.hiers) != 1 {
					t.Fatalf("v2 uses %d hierarchies, want 1", len(m.hiers))
				}
				idx = map[string]int{"memory": 0}
			} else if len(m.hiers) != countDistinct(tt.bases) {
				t.Errorf("uses %d hierarchies, want %d", len(m.hiers), countDistinct(tt.bases))
			}
			for c, want := range tt.bases {
				i := idx[c]
				if i < 0 {
					t.Errorf("%s: no hierarchy", c)
					continue
				}
				if got := m.hiers[i].base; got != filepath.Join(f.root, want) {
					t.Errorf("%s base = %s, want %s", c, got, filepath.Join(f.root, want))
				}
				if !f.exists(want) {
					t.Errorf("%s base %s not created", c, want)
				}
			}
			d := m.Describe()
			if !strings.HasPrefix(d, "cgroup "+tt.version.String()+" (memory, pids, cpu") || !strings.Contains(d, filepath.Join(f.root, tt.bases["memory"])) {
				t.Errorf("Describe = %q", d)
			}
		})
	}
}

func countDistinct(m map[string]string) int {
	seen := map[string]bool{}
	for _, v := range m {
		seen[v] = true
	}
	return len(seen)
}

func TestDetectV2EnablesControllers(t *testing.T) {
	own := "sys/fs/cgroup/system.slice/coderunner.service"
	tests := []struct {
		name        string
		ownSubtree  string // before
		wantOwn     string // after
		wantBase    string
		existingDir bool
	}{
		{"nothing enabled", "", "+memory +pids +cpu", "+memory +pids +cpu", false},
		{"some enabled", "pids io\n", "+memory +cpu", "+memory +pids +cpu", false},
		{"all enabled, base left by an earlier run", "cpu io memory pids\n", "cpu io memory pids\n", "cpu memory pids\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v2Tree(t)
			f.write(own+"/cgroup.subtree_control", tt.ownSubtree)
			if tt.existingDir {
				f.mkcgroup(own+"/coderunner", nil, map[string]string{"cgroup.subtree_control": "cpu memory pids\n"})
			}
			if _, err := Detect(opts); err != nil {
				t.Fatal(err)
			}
			if got := f.read(own + "/cgroup.subtree_control"); got != tt.wantOwn {
				t.Errorf("own cgroup.subtree_control = %q, want %q", got, tt.wantOwn)
			}
			if got := f.read(own + "/coderunner/cgroup.subtree_control"); got != tt.wantBase {
				t.Errorf("coderunner/cgroup.subtree_control = %q, want %q", got, tt.wantBase)
			}
		})
	}
}

func TestDetectV2FromSelfLeaf(t *testing.T) {
	f, opts := v2Tree(t)
	opts.SelfCgroup = filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(opts.SelfCgroup, []byte("0::/system.slice/coderunner.service/coderunner-self\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Detect(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(f.root, "sys/fs/cgroup/system.slice/coderunner.service/coderunner")
	if m.hiers[0].base != want {
		t.Errorf("base = %s, want %s", m.hiers[0].base, want)
	}
}

func TestEvacuate(t *testing.T) {
	own := "sys/fs/cgroup/system.slice/coderunner.service"
	tests := []struct {
		name    string
		procs   string
		wantErr string
	}{
		{"alone", strconv.Itoa(os.Getpid()) + "\n", ""},
		{"shared", strconv.Itoa(os.Getpid()) + "\n1\n", "holds other processes (" + strconv.Itoa(os.Getpid()) + " 1)"},
		{"not listed", "1\n", "holds other processes (1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v2Tree(t)
			f.write(own+"/cgroup.procs", tt.procs)
			m := &Manager{hooks: opts.hooks}
			err := m.evacuate(filepath.Join(f.root, own), "coderunner")
			if tt.wantErr != "" {
				if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("evacuate = %v, want ErrUnavailable containing %q", err, tt.wantErr)
				}
				if f.exists(own + "/coderunner-self") {
					t.Error("created the leaf though it moved nothing")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.read(own + "/coderunner-self/cgroup.procs"); got != strconv.Itoa(os.Getpid()) {
				t.Errorf("leaf cgroup.procs = %q, want our pid", got)
			}
		})
	}
}

func TestDetectUnavailable(t *testing.T) {
	own := "sys/fs/cgroup/system.slice/coderunner.service"
	tests := []struct {
		name    string
		setup   func(f *fakeTree, o *Options)
		wantErr string
	}{
		{"no cgroup mounted", func(f *fakeTree, o *Options) {
			*o = f.options("none")
		}, "no cgroup file system is mounted"},
		{"controllers not delegated", func(f *fakeTree, o *Options) {
			f.write(own+"/cgroup.controllers", "cpu pids\n")
		}, "cgroup v2 controllers memory are not delegated to our cgroup: " + "ROOT/" + own + `/cgroup.controllers lists "cpu pids"; ` +
			"the cgroup above must enable them for its children: echo '+memory' > ROOT/sys/fs/cgroup/system.slice/cgroup.subtree_control"},
		{"controllers not delegated to a namespace's root", func(f *fakeTree, o *Options) {
			f.write("sys/fs/cgroup/cgroup.controllers", "pids\n")
			o.SelfCgroup = writeTemp(f.t, "0::/\n")
		}, "cgroup v2 controllers memory, cpu are not delegated to our cgroup: ROOT/sys/fs/cgroup/cgroup.controllers lists \"pids\"; the cgroup above ours, outside this cgroup namespace, must enable them: on the host, echo '+memory +cpu' > <its directory>/cgroup.subtree_control"},
		{"own cgroup not visible", func(f *fakeTree, o *Options) {
			o.SelfCgroup = writeTemp(f.t, "0::/../../elsewhere\n")
		}, "outside our cgroup namespace"},
		{"no v2 entry", func(f *fakeTree, o *Options) {
			o.SelfCgroup = writeTemp(f.t, "1:name=systemd:/\n")
		}, "has no cgroup v2 entry"},
		{"own cgroup missing", func(f *fakeTree, o *Options) {
			o.SelfCgroup = writeTemp(f.t, "0::/gone.scope\n")
		}, "unable to read the controllers"},
		{"mount table unreadable", func(f *fakeTree, o *Options) {
			o.MountInfo = filepath.Join(f.root, "missing")
		}, "unable to read the mount table"},
		{"malformed self cgroup", func(f *fakeTree, o *Options) {
			o.SelfCgroup = writeTemp(f.t, "garbage\n")
		}, "unable to parse"},
		{"v1 without pids", func(f *fakeTree, o *Options) {
			*o = f.options("v1-comount")
			o.MountInfo = writeTemp(f.t, strings.ReplaceAll(readFixture(f.t, "v1-comount/mountinfo"), "rw,pids", "rw,hugetlb"))
		}, "the cgroup v1 pids controller is not mounted"},
		{"v1 memory not in self cgroup", func(f *fakeTree, o *Options) {
			*o = f.options("v1-comount")
			o.SelfCgroup = writeTemp(f.t, "10:pids:/\n3:cpu,cpuacct:/\n")
		}, "does not list the cgroup v1 memory controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v2Tree(t)
			tt.setup(f, &opts)
			m, err := Detect(opts)
			tt.wantErr = strings.ReplaceAll(tt.wantErr, "ROOT", f.root)
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Detect = %v, %v; want ErrUnavailable containing %q", m, err, tt.wantErr)
			}
		})
	}
}

func TestDetectBadPrefix(t *testing.T) {
	_, opts := v2Tree(t)
	opts.Prefix = "../escape"
	if _, err := Detect(opts); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("Detect = %v, want ErrInvalidName", err)
	}
}

func writeTemp(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
