package cgroup

import (
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	v2Own  = "sys/fs/cgroup/system.slice/coderunner.service"
	v2Base = v2Own + "/coderunner"
)

func mustDetect(t testing.TB, opts Options) *Manager {
	t.Helper()
	m, err := Detect(opts)
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	return m
}

func TestCreateV2(t *testing.T) {
	tests := []struct {
		name   string
		omit   []string
		limits Limits
		// want are the files whose contents change; every other file
		// keeps the contents of a new group.
		want map[string]string
	}{
		{"all limits", nil, Limits{Memory: 64 << 20, Processes: 32, CPUs: 0.5}, map[string]string{
			"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "32", "cpu.max": "50000 100000",
		}},
		{"no limits", nil, Limits{}, nil},
		{"several cores", nil, Limits{CPUs: 2.25}, map[string]string{"cpu.max": "225000 100000"}},
		{"below the kernel's minimum quota", nil, Limits{CPUs: 0.0001}, map[string]string{"cpu.max": "1000 100000"}},
		{"no swap accounting", []string{"memory.swap.max"}, Limits{Memory: 1 << 30}, map[string]string{"memory.max": "1073741824"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v2Tree(t, tt.omit...)
			m := mustDetect(t, opts)
			g, err := m.Create("run-1", tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			want := f.files(nil)
			maps.Copy(want, tt.want)
			if got := f.dirFiles(v2Base + "/run-1"); !maps.Equal(got, want) {
				t.Errorf("files after Create:\n got %v\nwant %v", got, want)
			}
			fd, ok := g.FD()
			var st unix.Stat_t
			if !ok || unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				t.Errorf("FD() = %d, %v; want a directory descriptor", fd, ok)
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if f.exists(v2Base + "/run-1") {
				t.Error("Destroy left the group directory")
			}
			if _, ok := g.FD(); ok {
				t.Error("FD() ok after Destroy")
			}
		})
	}
}

// v1Base is the run directory of a controller in the v1 fake tree.
func v1Base(c string) string { return v1Dirs[c] + "/coderunner" }

func TestCreateV1(t *testing.T) {
	tests := []struct {
		name   string
		omit   []string
		limits Limits
		want   map[string]map[string]string // controller → changed files
	}{
		{"all limits", nil, Limits{Memory: 64 << 20, Processes: 32, CPUs: 1.5}, map[string]map[string]string{
			"memory": {"memory.limit_in_bytes": "67108864", "memory.memsw.limit_in_bytes": "67108864", "memory.swappiness": "0"},
			"pids":   {"pids.max": "32"},
			"cpu":    {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000"},
		}},
		{"no limits", nil, Limits{}, nil},
		{"no swap accounting", []string{"memory.memsw.limit_in_bytes"}, Limits{Memory: 4096}, map[string]map[string]string{
			"memory": {"memory.limit_in_bytes": "4096", "memory.swappiness": "0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v1Tree(t, tt.omit...)
			m := mustDetect(t, opts)
			if len(m.hiers) != 4 {
				t.Fatalf("%d hierarchies, want 4 (memory, pids, cpu+cpuacct, freezer)", len(m.hiers))
			}
			g, err := m.Create("run-1", tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := g.FD(); ok {
				t.Error("FD() ok on v1")
			}
			for _, h := range m.hiers {
				rel, _ := filepath.Rel(f.root, h.base+"/run-1")
				want := f.files(h.controllers)
				for _, c := range h.controllers {
					maps.Copy(want, tt.want[c])
				}
				if got := f.dirFiles(rel); !maps.Equal(got, want) {
					t.Errorf("%s after Create:\n got %v\nwant %v", rel, got, want)
				}
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			for c := range v1Dirs {
				if f.exists(v1Base(c) + "/run-1") {
					t.Errorf("Destroy left %s", v1Base(c)+"/run-1")
				}
			}
			if err := g.Destroy(); err != nil {
				t.Errorf("second Destroy: %v", err)
			}
		})
	}
}

func TestCreateRejects(t *testing.T) {
	tests := []struct {
		name    string
		group   string
		limits  Limits
		wantErr error
	}{
		{"empty", "", Limits{}, ErrInvalidName},
		{"dot", ".", Limits{}, ErrInvalidName},
		{"dot dot", "..", Limits{}, ErrInvalidName},
		{"slash", "a/b", Limits{}, ErrInvalidName},
		{"climb", "../x", Limits{}, ErrInvalidName},
		{"hidden", ".x", Limits{}, ErrInvalidName},
		{"NUL", "a\x00b", Limits{}, ErrInvalidName},
		{"space", "a b", Limits{}, ErrInvalidName},
		{"too long", strings.Repeat("a", maxNameLen+1), Limits{}, ErrInvalidName},
		{"negative memory", "ok", Limits{Memory: -1}, nil},
		{"negative processes", "ok", Limits{Processes: -1}, nil},
		{"negative CPUs", "ok", Limits{CPUs: -1}, nil},
		{"NaN CPUs", "ok", Limits{CPUs: math.NaN()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v2Tree(t)
			m := mustDetect(t, opts)
			_, err := m.Create(tt.group, tt.limits)
			if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Create = %v, want %v", err, tt.wantErr)
			}
			if got := f.dirFiles(v2Base); len(got) != len(v2Files) {
				t.Errorf("Create left something behind")
			}
			entries, _ := filepath.Glob(filepath.Join(f.root, v2Base, "*", "cgroup.procs"))
			if len(entries) != 0 {
				t.Errorf("Create left groups %v", entries)
			}
		})
	}
	// A name of the right shape is accepted.
	_, opts := v2Tree(t)
	if _, err := mustDetect(t, opts).Create("A-z_0.9"+strings.Repeat("x", maxNameLen-7), Limits{}); err != nil {
		t.Errorf("Create with a valid name: %v", err)
	}
}

func TestCreateRollsBack(t *testing.T) {
	// pids.max is missing, so the write of the process limit fails after
	// every directory was made and the memory limit written.
	f, opts := v1Tree(t, "pids.max")
	m := mustDetect(t, opts)
	_, err := m.Create("run-1", Limits{Memory: 1 << 20, Processes: 8})
	if err == nil || !strings.Contains(err.Error(), "pids.max=8") || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Create = %v, want an error naming pids.max=8", err)
	}
	for c := range v1Dirs {
		if f.exists(v1Base(c) + "/run-1") {
			t.Errorf("rollback left %s", v1Base(c)+"/run-1")
		}
	}
}

func TestCreateKeepsExisting(t *testing.T) {
	f, opts := v1Tree(t)
	m := mustDetect(t, opts)
	// Another run of that name exists in the pids hierarchy only: Create
	// fails there and must remove only what it made itself.
	f.mkcgroup(v1Base("pids")+"/run-1", []string{"pids"}, nil)
	if _, err := m.Create("run-1", Limits{}); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("Create = %v, want EEXIST", err)
	}
	if !f.exists(v1Base("pids") + "/run-1/pids.max") {
		t.Error("rollback removed a group it did not create")
	}
	if f.exists(v1Base("memory") + "/run-1") {
		t.Error("rollback left the memory group")
	}
}

func TestStatsV2(t *testing.T) {
	tests := []struct {
		name    string
		omit    []string
		files   []map[string]string // one Stats call per element
		want    Stats               // of the last call
		wantErr string
	}{
		{"counters", nil, []map[string]string{{
			"cpu.stat":       "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n",
			"memory.current": "1048576\n",
			"memory.peak":    "67108864\n",
			"memory.events":  "low 0\nhigh 0\nmax 57\noom 3\noom_kill 2\noom_group_kill 0\n",
		}}, Stats{CPU: 1234567 * time.Microsecond, Memory: 1 << 20, PeakMemory: 64 << 20, OOMKills: 2}, ""},
		{"kernel without oom_kill (before 4.13)", nil, []map[string]string{{
			"memory.events": "low 0\nhigh 0\nmax 9\noom 1\n",
		}}, Stats{}, ""},
		{"no trailing newline", nil, []map[string]string{{
			"memory.events": "oom_kill 7", "memory.current": "5", "cpu.stat": "usage_usec 1",
		}}, Stats{CPU: time.Microsecond, Memory: 5, OOMKills: 7}, ""},
		{"peak sampled without memory.peak", []string{"memory.peak"}, []map[string]string{
			{"memory.current": "300\n"},
			{"memory.current": "100\n"},
		}, Stats{Memory: 100, PeakMemory: 300}, ""},
		{"malformed number", nil, []map[string]string{{"memory.current": "12k\n"}}, Stats{}, "memory.current"},
		{"malformed counter", nil, []map[string]string{{"memory.events": "oom_kill -1\n"}}, Stats{}, "oom_kill"},
		{"missing file", []string{"cpu.stat"}, []map[string]string{{}}, Stats{}, "cpu.stat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v2Tree(t, tt.omit...)
			g, err := mustDetect(t, opts).Create("run", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var got Stats
			for _, files := range tt.files {
				for name, content := range files {
					f.write(v2Base+"/run/"+name, content)
				}
				got, err = g.Stats()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Stats = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Stats = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestStatsV1(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // controller/file → content
		want    Stats
		wantErr string
	}{
		{"counters", map[string]string{
			"cpuacct/cpuacct.usage":            "2500000000\n",
			"memory/memory.usage_in_bytes":     "4096\n",
			"memory/memory.max_usage_in_bytes": "67108864\n",
			"memory/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
			"memory/memory.failcnt":            "12345\n",
		}, Stats{CPU: 2500 * time.Millisecond, Memory: 4096, PeakMemory: 64 << 20, OOMKills: 1}, ""},
		{"reclaim without kills", map[string]string{
			"memory/memory.failcnt":     "99\n",
			"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		}, Stats{}, ""},
		{"kernel without the oom_kill line", map[string]string{
			"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 1\n",
		}, Stats{}, ""},
		{"malformed usage", map[string]string{"cpuacct/cpuacct.usage": "\n"}, Stats{}, "cpuacct.usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, opts := v1Tree(t)
			g, err := mustDetect(t, opts).Create("run", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range tt.files {
				c, file, _ := strings.Cut(name, "/")
				f.write(v1Base(c)+"/run/"+file, content)
			}
			got, err := g.Stats()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Stats = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Stats = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestStatsDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, tree := range []func(testing.TB, ...string) (*fakeTree, Options){v1Tree, v2Tree} {
		_, opts := tree(t)
		g, err := mustDetect(t, opts).Create("run", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = g.Stats() }); n != 0 {
			t.Errorf("%v: Stats allocates %v times", g.m.Version(), n)
		}
	}
}

func TestAddWritesEveryHierarchy(t *testing.T) {
	f, opts := v1Tree(t)
	m := mustDetect(t, opts)
	g, err := m.Create("run", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add(4242); err != nil {
		t.Fatal(err)
	}
	for _, h := range m.hiers {
		rel, _ := filepath.Rel(f.root, h.base+"/run/cgroup.procs")
		if got := f.read(rel); got != "4242" {
			t.Errorf("%s = %q, want 4242", rel, got)
		}
	}
}

func TestDestroyedGroup(t *testing.T) {
	_, opts := v2Tree(t)
	g, err := mustDetect(t, opts).Create("run", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Kill(); err != nil {
		t.Fatalf("Kill of an empty group: %v", err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if _, err := g.Stats(); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Stats after Destroy = %v, want ErrDestroyed", err)
	}
	if err := g.Add(1); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Add after Destroy = %v, want ErrDestroyed", err)
	}
	if err := g.Kill(); err != nil {
		t.Errorf("Kill after Destroy = %v, want nil", err)
	}
}

func TestReadPids(t *testing.T) {
	long := strings.Repeat("123456\n", 200) // spans several reads
	tests := []struct {
		name    string
		content string
		want    int
		last    int
	}{
		{"empty", "", 0, 0},
		{"one", "42\n", 1, 42},
		{"no trailing newline", "1\n2\n3", 3, 3},
		{"longer than one read", long + "7\n", 201, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			got, err := readPids(fd, nil)
			if err != nil || len(got) != tt.want || tt.want > 0 && got[len(got)-1] != tt.last {
				t.Fatalf("readPids = %v, %v; want %d pids ending in %d", got, err, tt.want, tt.last)
			}
		})
	}
}

func FuzzReadPids(f *testing.F) {
	f.Add([]byte("1\n22\n333\n"))
	f.Add([]byte(""))
	f.Add([]byte(strings.Repeat("1234567\n", 100)))
	dir := f.TempDir()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { unix.Close(fd) })
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readPids(fd, nil)
		if err != nil {
			t.Fatal(err)
		}
		// cgroup.procs lists one decimal pid per line; pids fit in
		// 22 bits, so compare only inputs of short numbers.
		fields := strings.FieldsFunc(string(data), func(r rune) bool { return r < '0' || r > '9' })
		for _, f := range fields {
			if len(f) > 9 {
				return
			}
		}
		if len(got) != len(fields) {
			t.Fatalf("readPids(%q) = %v, want %d pids", data, got, len(fields))
		}
		for i, f := range fields {
			if n, _ := strconv.Atoi(f); n != got[i] {
				t.Fatalf("readPids(%q) = %v, want %v", data, got, fields)
			}
		}
	})
}

// TestUpdate limits groups created without limits, as the native backend
// does for groups made ahead of need: the files end as Create would write
// them.
func TestUpdate(t *testing.T) {
	l := Limits{Memory: 64 << 20, Processes: 32, CPUs: 0.5}
	t.Run("v2", func(t *testing.T) {
		f, opts := v2Tree(t)
		m := mustDetect(t, opts)
		g, err := m.Create("run-1", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Update(l); err != nil {
			t.Fatal(err)
		}
		want := f.files(nil)
		maps.Copy(want, map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "32", "cpu.max": "50000 100000"})
		if got := f.dirFiles(v2Base + "/run-1"); !maps.Equal(got, want) {
			t.Errorf("files after Update:\n got %v\nwant %v", got, want)
		}
		if err := g.Destroy(); err != nil {
			t.Fatal(err)
		}
		if err := g.Update(l); !errors.Is(err, ErrDestroyed) {
			t.Errorf("Update after Destroy: %v, want ErrDestroyed", err)
		}
	})
	t.Run("v1", func(t *testing.T) {
		f, opts := v1Tree(t)
		m := mustDetect(t, opts)
		g, err := m.Create("run-1", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Update(l); err != nil {
			t.Fatal(err)
		}
		if got := f.dirFiles(v1Base("memory") + "/run-1")["memory.limit_in_bytes"]; got != "67108864" {
			t.Errorf("memory.limit_in_bytes = %q after Update", got)
		}
		if err := g.Update(Limits{Memory: -1}); err == nil {
			t.Error("Update accepted a negative memory limit")
		}
		if err := g.Destroy(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRefillCPU writes a kept group's CPU bandwidth again (which the
// kernel takes as a new period with the whole quota), on both versions,
// and nothing without a CPU limit; on v1 the quota alone, whose write
// refills as the period's does.
func TestRefillCPU(t *testing.T) {
	l := Limits{Memory: 64 << 20, Processes: 32, CPUs: 0.5}
	for _, tc := range []struct {
		name  string
		tree  func(testing.TB, ...string) (*fakeTree, Options)
		dir   string
		file  string
		after string
		// untouched is a file the refill does not write.
		untouched string
	}{
		{"v2", v2Tree, v2Base + "/run-1", "cpu.max", "50000 100000", ""},
		{"v1", v1Tree, v1Base("cpu") + "/run-1", "cpu.cfs_quota_us", "50000", "cpu.cfs_period_us"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, opts := tc.tree(t)
			m := mustDetect(t, opts)
			g, err := m.Create("run-1", l)
			if err != nil {
				t.Fatal(err)
			}
			// What the kernel keeps in the file is the same value: the
			// write is what counts, so the test clears the file first.
			f.write(tc.dir+"/"+tc.file, "")
			if tc.untouched != "" {
				f.write(tc.dir+"/"+tc.untouched, "")
			}
			if err := g.RefillCPU(Limits{}); err != nil {
				t.Fatal(err)
			}
			if got := f.dirFiles(tc.dir)[tc.file]; got != "" {
				t.Errorf("%s = %q after RefillCPU without a CPU limit, want it untouched", tc.file, got)
			}
			if err := g.RefillCPU(l); err != nil {
				t.Fatal(err)
			}
			if got := f.dirFiles(tc.dir)[tc.file]; got != tc.after {
				t.Errorf("%s = %q after RefillCPU, want %q", tc.file, got, tc.after)
			}
			if got := f.dirFiles(tc.dir)[tc.untouched]; tc.untouched != "" && got != "" {
				t.Errorf("%s = %q after RefillCPU, want it untouched", tc.untouched, got)
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if err := g.RefillCPU(l); !errors.Is(err, ErrDestroyed) {
				t.Errorf("RefillCPU after Destroy: %v, want ErrDestroyed", err)
			}
		})
	}
}

// TestSetBackground gives a group the least CPU weight and the default
// back, on both versions.
func TestSetBackground(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tree       func(t testing.TB, omit ...string) (*fakeTree, Options)
		dir, file  string
		background string
		normal     string
	}{
		{"v2", v2Tree, v2Base + "/run-1", "cpu.weight", "1", "100"},
		{"v1", v1Tree, v1Base("cpu") + "/run-1", "cpu.shares", "2", "1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, opts := tc.tree(t)
			g, err := mustDetect(t, opts).Create("run-1", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for _, on := range []bool{true, false, true} {
				if err := g.SetBackground(on); err != nil {
					t.Fatal(err)
				}
				want := tc.normal
				if on {
					want = tc.background
				}
				if got := f.dirFiles(tc.dir)[tc.file]; got != want {
					t.Errorf("SetBackground(%v): %s = %q, want %q", on, tc.file, got, want)
				}
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if err := g.SetBackground(false); !errors.Is(err, ErrDestroyed) {
				t.Errorf("SetBackground after Destroy: %v, want ErrDestroyed", err)
			}
		})
	}
}

func TestResetPeak(t *testing.T) {
	t.Run("v1 writes max_usage_in_bytes", func(t *testing.T) {
		f, opts := v1Tree(t)
		g, err := mustDetect(t, opts).Create("run", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f.write(v1Base("memory")+"/run/memory.max_usage_in_bytes", "67108864\n")
		if err := g.ResetPeak(); err != nil {
			t.Fatal(err)
		}
		if got := f.read(v1Base("memory") + "/run/memory.max_usage_in_bytes"); got != "0" {
			t.Fatalf("memory.max_usage_in_bytes = %q after ResetPeak, want 0", got)
		}
	})
	t.Run("v2 writes the descriptor Stats reads", func(t *testing.T) {
		f, opts := v2Tree(t)
		g, err := mustDetect(t, opts).Create("run", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.ResetPeak(); err != nil {
			t.Fatal(err)
		}
		if got := f.read(v2Base + "/run/memory.peak"); !strings.HasPrefix(got, "reset") {
			t.Fatalf("memory.peak = %q after ResetPeak, want the reset written to it", got)
		}
	})
	t.Run("v2 before memory.peak could be written", func(t *testing.T) {
		f, opts := v2Tree(t)
		g, err := mustDetect(t, opts).Create("run", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.stats {
			g.stats[i].writable = false
		}
		f.write(v2Base+"/run/cgroup.procs", "4242\n")
		if err := g.ResetPeak(); err != nil {
			t.Fatal(err)
		}
		// The processes are in a new child, which the group's
		// controllers reach; the limits stay on the group.
		if got := f.read(v2Base + "/run/peak-1/cgroup.procs"); got != "4242\n" {
			t.Fatalf("peak-1/cgroup.procs = %q after ResetPeak, want the group's process moved there", got)
		}
		if got := f.read(v2Base + "/run/cgroup.subtree_control"); got != "+memory +pids +cpu" {
			t.Fatalf("cgroup.subtree_control = %q, want the controllers given to the child", got)
		}
		f.write(v2Base+"/run/cgroup.procs", "")
		f.write(v2Base+"/run/memory.peak", "999\n")
		f.write(v2Base+"/run/peak-1/memory.peak", "123\n")
		if s, err := g.Stats(); err != nil || s.PeakMemory != 123 {
			t.Fatalf("Stats = %+v, %v; want the child's peak, 123", s, err)
		}
		if err := g.Add(77); err != nil {
			t.Fatal(err)
		}
		if got := f.read(v2Base + "/run/peak-1/cgroup.procs"); got != "77" {
			t.Fatalf("Add wrote %q to the child's cgroup.procs, want 77", got)
		}
		if fd, ok := g.FD(); !ok || fd != g.leaf {
			t.Fatalf("FD = %d, %v; want the child's descriptor %d", fd, ok, g.leaf)
		}
		// The next reset makes another child and removes the first.
		f.write(v2Base+"/run/peak-1/cgroup.procs", "")
		for i := range g.stats {
			g.stats[i].writable = false
		}
		if err := g.ResetPeak(); err != nil {
			t.Fatal(err)
		}
		if f.exists(v2Base+"/run/peak-1") || !f.exists(v2Base+"/run/peak-2") {
			t.Fatal("the second reset did not replace peak-1 by peak-2")
		}
		if err := g.Destroy(); err != nil {
			t.Fatal(err)
		}
		if f.exists(v2Base + "/run") {
			t.Fatal("Destroy left the group or its child")
		}
	})
	t.Run("v2 sampled peak starts again", func(t *testing.T) {
		f, opts := v2Tree(t, "memory.peak")
		g, err := mustDetect(t, opts).Create("run", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f.write(v2Base+"/run/memory.current", "300\n")
		if _, err := g.Stats(); err != nil {
			t.Fatal(err)
		}
		if err := g.ResetPeak(); err != nil {
			t.Fatal(err)
		}
		f.write(v2Base+"/run/memory.current", "100\n")
		s, err := g.Stats()
		if err != nil || s.PeakMemory != 100 {
			t.Fatalf("Stats = %+v, %v; want the peak sampled since the reset, 100", s, err)
		}
	})
	t.Run("destroyed", func(t *testing.T) {
		_, opts := v1Tree(t)
		g, err := mustDetect(t, opts).Create("run", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_ = g.Destroy()
		if err := g.ResetPeak(); !errors.Is(err, ErrDestroyed) {
			t.Fatalf("ResetPeak = %v, want ErrDestroyed", err)
		}
	})
}

func TestDetectWritable(t *testing.T) {
	for _, tree := range []func(testing.TB, ...string) (*fakeTree, Options){v1Tree, v2Tree} {
		f, opts := tree(t)
		m, err := DetectWritable(opts, "probe-1")
		if err != nil {
			t.Fatal(err)
		}
		if f.exists(v2Base+"/probe-1") || f.exists(v1Base("memory")+"/probe-1") {
			t.Fatalf("%v: the probe group is left", m.Version())
		}
	}
	if _, err := DetectWritable(Options{Root: t.TempDir()}, "probe-1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("DetectWritable without a hierarchy = %v, want ErrUnavailable", err)
	}
}
