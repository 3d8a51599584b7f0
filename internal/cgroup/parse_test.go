package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseUint(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"67108864\n", 67108864, false},
		{" 12 ", 12, false},
		{"9223372036854775807", 1<<63 - 1, false},
		{"9223372036854775808", 0, true},
		{"99999999999999999999", 0, true},
		{"", 0, true},
		{"\n", 0, true},
		{"-1", 0, true},
		{"+1", 0, true},
		{"max", 0, true},
		{"1 2", 0, true},
	}
	for _, tt := range tests {
		got, err := parseUint([]byte(tt.in))
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseUint(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestKeyValue(t *testing.T) {
	const events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 1\n"
	tests := []struct {
		name, data, key string
		want            int64
		wantOK, wantErr bool
	}{
		{"memory.events", events, "oom_kill", 2, true, false},
		{"a key that prefixes another", events, "oom", 3, true, false},
		{"absent", events, "nope", 0, false, false},
		{"empty file", "", "oom_kill", 0, false, false},
		{"last line without newline", "usage_usec 10\nuser_usec 7", "user_usec", 7, true, false},
		{"oom_control", "oom_kill_disable 0\nunder_oom 1\noom_kill 4\n", "oom_kill", 4, true, false},
		{"bad value", "oom_kill x\n", "oom_kill", 0, true, true},
		{"value missing", "oom_kill \n", "oom_kill", 0, true, true},
		{"line without a value", "oom_kill\noom_kill 5\n", "oom_kill", 5, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok, err := keyValue([]byte(tt.data), tt.key)
			if v != tt.want || ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Errorf("keyValue(%q) = %d, %v, %v; want %d, %v, error %v", tt.key, v, ok, err, tt.want, tt.wantOK, tt.wantErr)
			}
		})
	}
}

func TestParseMountInfoLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    mount
		wantErr bool
	}{
		{"v1 co-mounted", "28 25 0:23 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct",
			mount{Root: "/", MountPoint: "/sys/fs/cgroup/cpu,cpuacct", FSType: "cgroup", SuperOptions: []string{"rw", "cpu", "cpuacct"}}, false},
		{"no optional fields", "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
			mount{Root: "/", MountPoint: "/sys/fs/cgroup/unified", FSType: "cgroup2", SuperOptions: []string{"rw"}}, false},
		{"several optional fields", "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:3 propagate_from:2 - ext3 /dev/root rw,errors=continue",
			mount{Root: "/mnt1", MountPoint: "/mnt2", FSType: "ext3", SuperOptions: []string{"rw", "errors=continue"}}, false},
		{"escaped space and backslash", `412 26 0:48 /a\134b /mnt/my\040disk rw - ext4 /dev/sdb1 rw`,
			mount{Root: `/a\b`, MountPoint: "/mnt/my disk", FSType: "ext4", SuperOptions: []string{"rw"}}, false},
		{"bind-mounted sub-tree", "1226 1225 0:29 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw",
			mount{Root: "/docker/abc", MountPoint: "/sys/fs/cgroup", FSType: "cgroup2", SuperOptions: []string{"rw"}}, false},
		{"no separator", "41 31 0:38 / /x rw,relatime cgroup2 cgroup2 rw", mount{}, true},
		{"separator too early", "41 31 0:38 / - cgroup2 cgroup2 rw", mount{}, true},
		{"truncated after separator", "41 31 0:38 / /x rw - cgroup2", mount{}, true},
		{"truncated escape", `41 31 0:38 / /x\04 rw - cgroup2 cgroup2 rw`, mount{}, true},
		{"bad escape", `41 31 0:38 / /x\9zz rw - cgroup2 cgroup2 rw`, mount{}, true},
		{"empty", "", mount{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMountInfoLine(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseMountInfoLine error = %v, want error %v", err, tt.wantErr)
			}
			if got.Root != tt.want.Root || got.MountPoint != tt.want.MountPoint || got.FSType != tt.want.FSType ||
				!slices.Equal(got.SuperOptions, tt.want.SuperOptions) {
				t.Errorf("parseMountInfoLine = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseMountInfoKeepsCgroups(t *testing.T) {
	mounts, err := parseMountInfo(readFixture(t, "hybrid/mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	var v1, v2 int
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup":
			v1++
		case "cgroup2":
			v2++
		default:
			t.Errorf("kept a %s mount", m.FSType)
		}
	}
	if v1 != 9 || v2 != 1 {
		t.Errorf("got %d v1 and %d v2 mounts, want 9 and 1", v1, v2)
	}
}

func TestParseSelfCgroupLine(t *testing.T) {
	tests := []struct {
		line    string
		want    membership
		wantErr bool
	}{
		{"0::/", membership{Path: "/"}, false},
		{"0::/system.slice/x.service", membership{Path: "/system.slice/x.service"}, false},
		{"4:memory:/process_api/32e0", membership{Controllers: []string{"memory"}, Path: "/process_api/32e0"}, false},
		{"3:cpu,cpuacct:/a", membership{Controllers: []string{"cpu", "cpuacct"}, Path: "/a"}, false},
		{"1:name=systemd:/user.slice", membership{Controllers: []string{"name=systemd"}, Path: "/user.slice"}, false},
		{"0::/with:colon", membership{Path: "/with:colon"}, false},
		{"0::/../..", membership{Path: "/../.."}, false},
		{"0:/", membership{}, true},
		{"x::/", membership{}, true},
		{"0::relative", membership{}, true},
		{"", membership{}, true},
	}
	for _, tt := range tests {
		got, err := parseSelfCgroupLine(tt.line)
		if (err != nil) != tt.wantErr || got.Path != tt.want.Path || !slices.Equal(got.Controllers, tt.want.Controllers) {
			t.Errorf("parseSelfCgroupLine(%q) = %+v, %v; want %+v, error %v", tt.line, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzKeyValue(f *testing.F) {
	f.Add([]byte("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\n"), "oom_kill")
	f.Add([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1"), "oom_kill")
	f.Add([]byte("usage_usec 99999999999999999999\n"), "usage_usec")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		v, ok, err := keyValue(data, key)
		if !ok && (v != 0 || err != nil) {
			t.Fatalf("absent key gave %d, %v", v, err)
		}
		if !ok || err != nil {
			return
		}
		// The value is that of the first "key value" line, as strconv
		// reads it.
		for _, line := range strings.Split(string(data), "\n") {
			k, val, found := strings.Cut(line, " ")
			if !found || k != key {
				continue
			}
			want, perr := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			if perr != nil || want != v {
				t.Fatalf("keyValue(%q) = %d, strconv reads %q as %d, %v", key, v, val, want, perr)
			}
			return
		}
		t.Fatalf("keyValue(%q) = %d, but no line has the key", key, v)
	})
}

func FuzzParseMountInfoLine(f *testing.F) {
	for line := range strings.Lines(readFixture(f, "hybrid/mountinfo") + readFixture(f, "v1-comount/mountinfo") + readFixture(f, "v2/mountinfo")) {
		f.Add(strings.TrimSuffix(line, "\n"))
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parseMountInfoLine(line)
		if err != nil {
			return
		}
		if m.FSType == "" || len(m.SuperOptions) == 0 || strings.Contains(m.MountPoint+m.Root, `\`) && !strings.Contains(line, `\134`) {
			t.Fatalf("parseMountInfoLine(%q) = %+v", line, m)
		}
	})
}

func FuzzParseSelfCgroupLine(f *testing.F) {
	for line := range strings.Lines(readFixture(f, "hybrid/cgroup") + readFixture(f, "v1-comount/cgroup")) {
		f.Add(strings.TrimSuffix(line, "\n"))
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parseSelfCgroupLine(line)
		if err != nil {
			return
		}
		if !strings.HasPrefix(m.Path, "/") || !strings.HasSuffix(line, ":"+m.Path) {
			t.Fatalf("parseSelfCgroupLine(%q) = %+v", line, m)
		}
		for _, c := range m.Controllers {
			if strings.Contains(c, ":") {
				t.Fatalf("parseSelfCgroupLine(%q): controller %q", line, c)
			}
		}
	})
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
