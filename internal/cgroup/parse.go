package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The parsers below read the kernel's text formats. Those that run on every
// Stats call work on []byte and do not allocate.

var errNoNumber = errors.New("not a decimal number")

// parseUint parses a non-negative decimal number, ignoring surrounding
// white space (cgroup files end in a newline).
func parseUint(b []byte) (int64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 19 {
		return 0, errNoNumber
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNoNumber
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, errNoNumber
		}
		n = n*10 + d
	}
	return n, nil
}

// keyValue returns the value of key in a flat-keyed file such as
// memory.events, cpu.stat or memory.oom_control: one "key value" pair per
// line. ok is false when the key is absent, which is how older kernels
// express a counter they do not have.
func keyValue(data []byte, key string) (v int64, ok bool, err error) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		k, val, found := bytes.Cut(line, []byte{' '})
		if !found || string(k) != key {
			continue
		}
		v, err = parseUint(val)
		if err != nil {
			// A copy of val, so that the caller's buffer can stay on its
			// stack.
			return 0, true, fmt.Errorf("bad value %q for %s: %w", string(val), key, err)
		}
		return v, true, nil
	}
	return 0, false, nil
}

// mount is one line of /proc/self/mountinfo, reduced to what Detect needs.
type mount struct {
	// Root is the directory of the file system mounted here: for a cgroup
	// file system, the cgroup shown at MountPoint.
	Root string
	// MountPoint is where it is mounted.
	MountPoint string
	// FSType is "cgroup" or "cgroup2" for the mounts Detect uses.
	FSType string
	// SuperOptions are the per-super-block options; for a v1 cgroup they
	// name the controllers of the hierarchy ("rw,cpu,cpuacct").
	SuperOptions []string
}

// parseMountInfoLine parses one line of proc_pid_mountinfo(5):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// The number of optional fields before "-" varies.
func parseMountInfoLine(line string) (mount, error) {
	f := strings.Fields(line)
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || len(f) < sep+4 {
		return mount{}, fmt.Errorf("malformed mountinfo line %q", line)
	}
	root, err := unescapeOctal(f[3])
	if err != nil {
		return mount{}, fmt.Errorf("malformed mountinfo root in %q: %w", line, err)
	}
	mp, err := unescapeOctal(f[4])
	if err != nil {
		return mount{}, fmt.Errorf("malformed mountinfo mount point in %q: %w", line, err)
	}
	return mount{
		Root:         root,
		MountPoint:   mp,
		FSType:       f[sep+1],
		SuperOptions: strings.Split(f[sep+3], ","),
	}, nil
}

// parseMountInfo parses a whole mountinfo file, keeping only cgroup and
// cgroup2 mounts: other lines are never needed, and an odd line elsewhere
// in the table must not make cgroups unavailable.
func parseMountInfo(data string) ([]mount, error) {
	var out []mount
	for line := range strings.Lines(data) {
		line = strings.TrimSuffix(line, "\n")
		if !strings.Contains(line, " - cgroup") {
			continue
		}
		m, err := parseMountInfoLine(line)
		if err != nil {
			return nil, err
		}
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			out = append(out, m)
		}
	}
	return out, nil
}

// unescapeOctal undoes the \ooo escapes the kernel uses for space, tab,
// newline and backslash in mountinfo paths.
func unescapeOctal(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), nil
}

// membership is one line of /proc/self/cgroup: "4:memory:/a/b" on v1,
// "0::/a/b" on v2.
type membership struct {
	// Controllers of the hierarchy; empty for v2. Named hierarchies appear
	// as "name=systemd".
	Controllers []string
	// Path is our cgroup, relative to the hierarchy's root (or to the root
	// of our cgroup namespace).
	Path string
}

// parseSelfCgroupLine parses one line of /proc/self/cgroup.
func parseSelfCgroupLine(line string) (membership, error) {
	id, rest, ok := strings.Cut(line, ":")
	if !ok {
		return membership{}, fmt.Errorf("malformed cgroup line %q", line)
	}
	ctrls, path, ok := strings.Cut(rest, ":")
	if !ok {
		return membership{}, fmt.Errorf("malformed cgroup line %q", line)
	}
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return membership{}, fmt.Errorf("malformed hierarchy id in cgroup line %q", line)
	}
	if !strings.HasPrefix(path, "/") {
		return membership{}, fmt.Errorf("malformed path in cgroup line %q", line)
	}
	var m membership
	if ctrls != "" {
		m.Controllers = strings.Split(ctrls, ",")
	}
	m.Path = path
	return m, nil
}

// parseSelfCgroup parses a whole /proc/self/cgroup file.
func parseSelfCgroup(data string) ([]membership, error) {
	var out []membership
	for line := range strings.Lines(data) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		m, err := parseSelfCgroupLine(line)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
