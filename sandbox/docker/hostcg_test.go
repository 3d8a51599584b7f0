package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/sandbox"
)

const v1MountInfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const v2MountInfo = `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate
`

func TestLocateCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, membership, mountinfo string
		v2                          bool
		mem, cpu                    string
		fail                        bool
	}{
		{"v1 cgroupfs driver", "4:memory:/docker/abc\n2:cpuacct:/docker/abc\n1:cpu:/docker/abc\n0::/\n", v1MountInfo,
			false, "/sys/fs/cgroup/memory/docker/abc", "/sys/fs/cgroup/cpuacct/docker/abc", false},
		{"v1 co-mounted", "3:cpu,cpuacct:/system.slice/docker-abc.scope\n2:memory:/system.slice/docker-abc.scope\n",
			"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			false, "/sys/fs/cgroup/memory/system.slice/docker-abc.scope", "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-abc.scope", false},
		{"v2", "0::/system.slice/docker-abc.scope\n", v2MountInfo,
			true, "/sys/fs/cgroup/system.slice/docker-abc.scope", "/sys/fs/cgroup/system.slice/docker-abc.scope", false},
		{"v2 bind of a subtree", "0::/docker/abc\n", "30 23 0:26 /docker /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			true, "/sys/fs/cgroup/abc", "/sys/fs/cgroup/abc", false},
		{"escaped mount point", "0::/x\n", `30 23 0:26 / /sys/fs/cgroup\040two rw - cgroup2 cgroup2 rw` + "\n",
			true, "/sys/fs/cgroup two/x", "/sys/fs/cgroup two/x", false},
		{"outside the mount", "0::/other\n", "30 23 0:26 /docker /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", false, "", "", true},
		{"no memory membership", "2:cpuacct:/a\n", v1MountInfo, false, "", "", true},
		{"nothing mounted", "0::/\n", "", false, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg, err := locateCgroup(tc.membership, tc.mountinfo)
			if tc.fail {
				if err == nil {
					t.Fatalf("located %+v, want an error", cg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cg.v2 != tc.v2 || cg.mem != tc.mem || cg.cpu != tc.cpu {
				t.Fatalf("got v2=%v mem=%s cpu=%s", cg.v2, cg.mem, cg.cpu)
			}
		})
	}
}

func FuzzLocateCgroup(f *testing.F) {
	f.Add("4:memory:/docker/abc\n2:cpuacct:/docker/abc\n", v1MountInfo)
	f.Add("0::/a/b\n", v2MountInfo)
	f.Add("0::/../x\n", `1 1 0:1 /\134 /x\06 - cgroup2 c rw`)
	f.Fuzz(func(t *testing.T, membership, mountinfo string) {
		cg, err := locateCgroup(membership, mountinfo)
		if err == nil && (cg.mem == "" || cg.cpu == "") {
			t.Fatalf("located an empty directory: %+v", cg)
		}
	})
}

func TestKeyed(t *testing.T) {
	data := []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	if n, err := keyed(data, "oom_kill"); n != 3 || err != nil {
		t.Fatalf("oom_kill = %d, %v", n, err)
	}
	if n, err := keyed(data, "absent"); n != 0 || err != nil {
		t.Fatalf("absent = %d, %v", n, err)
	}
	if _, err := keyed([]byte("oom_kill x\n"), "oom_kill"); err == nil {
		t.Fatal("a malformed value was accepted")
	}
}

// TestContainerCgroupHere: on a local engine the backend reads a
// container's counters from its cgroup on this machine, in the hierarchy
// the kernel mounts (v2 where /sys/fs/cgroup is cgroup2; required with
// CODERUNNER_TEST_CGROUP2=1), not from the engine's slow stats: the
// directory it found holds the container's processes and the memory
// limit the engine set for the run, and a reading of it succeeds.
func TestContainerCgroupHere(t *testing.T) {
	b, spec := warmInternal(t, Options{})
	var fs unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &fs); err != nil {
		t.Fatal(err)
	}
	v2 := fs.Type == unix.CGROUP2_SUPER_MAGIC
	if os.Getenv("CODERUNNER_TEST_CGROUP2") == "1" && !v2 {
		t.Fatal("CODERUNNER_TEST_CGROUP2=1, and /sys/fs/cgroup is not cgroup v2")
	}
	spec.Limits.Memory = 96 * sandbox.MiB
	s, err := sandbox.Prepared(spec)
	if err != nil {
		t.Fatal(err)
	}
	image := b.images.forSpec(s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bx, err := b.create(ctx, s, image, specKey(s, image))
	if err != nil {
		t.Fatal(err)
	}
	defer b.discard(bx)
	if bx.cg == nil {
		t.Fatal("the container's cgroup was not found on this machine: its counters would come from the engine's stats")
	}
	if bx.cg.v2 != v2 {
		t.Fatalf("read as v2=%v on a host whose /sys/fs/cgroup is v2=%v", bx.cg.v2, v2)
	}
	limitFile := "memory.limit_in_bytes"
	if v2 {
		limitFile = "memory.max"
	}
	if got, err := number(filepath.Join(bx.cg.mem, limitFile)); err != nil || got != spec.Limits.Memory {
		t.Fatalf("%s of %s: %d, %v; want the run's %d", limitFile, bx.cg.mem, got, err, spec.Limits.Memory)
	}
	procs, err := os.ReadFile(filepath.Join(bx.cg.mem, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(procs))
	if len(pids) == 0 {
		t.Fatalf("%s holds no process", bx.cg.mem)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		membership, err := os.ReadFile(filepath.Join("/proc", p, "cgroup"))
		if err != nil {
			continue // gone since
		}
		if !strings.Contains("\n"+string(membership), ":"+bx.cg.path+"\n") {
			t.Errorf("process %d of %s is in %q, not %s", pid, bx.cg.mem, membership, bx.cg.path)
		}
	}
	u, err := bx.cg.read()
	if err != nil {
		t.Fatalf("reading %s: %v", bx.cg.mem, err)
	}
	if u.memory <= 0 || u.peak < u.memory || u.oomKills != 0 {
		t.Fatalf("a reading of a container that runs: %+v", u)
	}
	t.Logf("v2=%v %s: %+v", v2, bx.cg.mem, u)
}
