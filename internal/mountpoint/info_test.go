package mountpoint

import (
	"reflect"
	"testing"
)

func TestParseInfo(t *testing.T) {
	text := `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
37 25 0:31 / /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory
38 25 0:32 / /a\040b rw - tmpfs tmpfs rw

malformed line
39 25 0:33 / /c rw -
`
	want := []Entry{
		{Point: "/mnt2", FSType: "ext3", Options: []string{"rw", "noatime"}},
		{Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Options: []string{"ro", "nosuid", "nodev", "noexec", "relatime"}},
		{Point: "/a b", FSType: "tmpfs", Options: []string{"rw"}},
	}
	if got := ParseInfo(text); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseInfo:\n got %+v\nwant %+v", got, want)
	}
}
