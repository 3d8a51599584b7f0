package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// identity is who we are to the permission bits of cgroupfs: the
// effective uid, the effective and supplementary gids, and the user name
// that names a delegated subtree.
type identity struct {
	uid  int
	gids []int
	name string
}

// currentIdentity returns this process's identity; tests replace it to
// stand for an ordinary user while they run as root.
var currentIdentity = func() identity {
	id := identity{uid: os.Geteuid(), gids: []int{os.Getegid()}}
	if groups, err := os.Getgroups(); err == nil {
		id.gids = append(id.gids, groups...)
	}
	if u, err := user.LookupId(strconv.Itoa(id.uid)); err == nil {
		id.name = u.Username
	}
	return id
}

// delegatedPrefix starts the name of the directory root makes for a user
// in each cgroup v1 hierarchy: coderunner-<user name> (or
// coderunner-<uid> for a user without a name).
const delegatedPrefix = "coderunner-"

// delegatedNames are the directory names a subtree delegated to id may
// have, in the order they are looked for.
func delegatedNames(id identity) []string {
	var names []string
	if id.name != "" && validateName(delegatedPrefix+id.name) == nil {
		names = append(names, delegatedPrefix+id.name)
	}
	return append(names, delegatedPrefix+strconv.Itoa(id.uid))
}

// delegatedV1Dir is, for an ordinary user, the directory of one cgroup v1
// hierarchy beneath which the run groups may live: our own cgroup if it is
// delegated to us, else the first directory named as delegatedNames says
// found in our own cgroup or one of its ancestors, up to the top of the
// hierarchy's mount. A directory counts only when delegated says so. The
// error says where it looked and what root must do.
func delegatedV1Dir(own, controller string, id identity) (string, error) {
	if delegated(own, id, V1) == nil {
		return own, nil
	}
	names := delegatedNames(id)
	var reasons []string
	top := own
	for dir := own; ; dir = filepath.Dir(dir) {
		top = dir
		for _, name := range names {
			cand := filepath.Join(dir, name)
			err := delegated(cand, id, V1)
			if err == nil {
				return cand, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				reasons = append(reasons, err.Error())
			}
		}
		// The top of the mount is the last directory that is a cgroup:
		// the one above it (the tmpfs at /sys/fs/cgroup) has no
		// cgroup.procs.
		parent := filepath.Dir(dir)
		if parent == dir || !isCgroupDir(parent) {
			break
		}
	}
	owner := id.name
	if owner == "" {
		owner = strconv.Itoa(id.uid)
	}
	want := filepath.Join(top, names[0])
	msg := fmt.Sprintf("cgroup v1 %s: our cgroup %s is not delegated to uid %d, nor is a directory %s in it or above it; as root, delegate one: mkdir %s && chown -R %s %s (and the same in the memory, pids, cpu, cpuacct and freezer hierarchies)",
		controller, own, id.uid, names[0], want, owner, want)
	if len(reasons) > 0 {
		msg += "; not used: " + strings.Join(reasons, "; ")
	}
	return "", unavailable("%s", msg)
}

// isCgroupDir reports whether dir is a directory of a cgroup file system:
// every one has cgroup.procs.
func isCgroupDir(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, "cgroup.procs"))
	return err == nil
}

// delegated returns nil when the cgroup directory dir is delegated to id:
// a real directory (not a link) owned by id's uid, whose files that move
// processes into it (cgroup.procs, and tasks on v1) id may write. Root
// chowns all three when it delegates a subtree (chown -R); a directory
// whose files are id's but whose cgroup.procs or tasks is not was not
// delegated, and the kernel would refuse to move a process into it. The
// error wraps fs.ErrNotExist when dir does not exist.
func delegated(dir string, id identity, v Version) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ok:
		return fmt.Errorf("%s: no owner known", dir)
	case int(st.Uid) != id.uid:
		return fmt.Errorf("%s belongs to uid %d, not %d", dir, st.Uid, id.uid)
	}
	files := []string{"cgroup.procs"}
	if v == V1 {
		files = append(files, "tasks")
	}
	for _, name := range files {
		if err := writableBy(filepath.Join(dir, name), id); err != nil {
			return err
		}
	}
	return nil
}

// writableBy returns nil when the permission bits of file (a regular
// file, never followed if it is a link) let id write it, as the kernel
// decides: the owner's bits when id owns it, else the group's when one of
// id's groups does, else the others'.
func writableBy(file string, id identity) error {
	fi, err := os.Lstat(file)
	if err != nil {
		// Not wrapped: a directory without the file exists, and is
		// refused for a reason worth telling.
		return fmt.Errorf("%s: %v", file, err) //nolint:errorlint // see above
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok {
		return fmt.Errorf("%s is not a regular file", file)
	}
	perm := fi.Mode().Perm()
	var can bool
	switch {
	case int(st.Uid) == id.uid:
		can = perm&0o200 != 0
	case slices.Contains(id.gids, int(st.Gid)):
		can = perm&0o020 != 0
	default:
		can = perm&0o002 != 0
	}
	if !can {
		return fmt.Errorf("%s (uid %d, gid %d, mode %v) is not writable by uid %d", file, st.Uid, st.Gid, perm, id.uid)
	}
	return nil
}
