package docker

import (
	"testing"
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
