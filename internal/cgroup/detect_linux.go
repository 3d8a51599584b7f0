package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Controllers each version needs. On v1 the freezer is used when mounted.
var (
	v2Controllers = []string{"memory", "pids", "cpu"}
	v1Controllers = []string{"memory", "pids", "cpu", "cpuacct"}
)

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}

// Detect finds the cgroup interface of this machine and prepares the
// directory that will hold the run groups: <our cgroup>/<Prefix> in every
// hierarchy used. A v1 memory hierarchy means the controllers live on v1
// (a hybrid machine's cgroup2 tree then has none of them); otherwise a
// cgroup2 mount means v2. The error wraps ErrUnavailable with the reason
// when neither is usable.
func Detect(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := validateName(opts.Prefix); err != nil {
		return nil, fmt.Errorf("invalid Prefix: %w", err)
	}
	data, err := os.ReadFile(opts.MountInfo)
	if err != nil {
		return nil, unavailable("unable to read the mount table: %v", err)
	}
	mounts, err := parseMountInfo(string(data))
	if err != nil {
		return nil, unavailable("unable to parse %s: %v", opts.MountInfo, err)
	}
	data, err = os.ReadFile(opts.SelfCgroup)
	if err != nil {
		return nil, unavailable("unable to read our own cgroup: %v", err)
	}
	members, err := parseSelfCgroup(string(data))
	if err != nil {
		return nil, unavailable("unable to parse %s: %v", opts.SelfCgroup, err)
	}
	hasV2 := false
	for _, m := range mounts {
		switch {
		case m.FSType == "cgroup" && slices.Contains(m.SuperOptions, "memory"):
			return detectV1(opts, mounts, members)
		case m.FSType == "cgroup2":
			hasV2 = true
		}
	}
	if hasV2 {
		return detectV2(opts, mounts, members)
	}
	return nil, unavailable("no cgroup file system is mounted (%s has neither cgroup2 nor a cgroup v1 memory hierarchy)", opts.MountInfo)
}

// ownDir maps our cgroup path to a directory through the first mount
// accepted by match whose root contains it. A bind mount of a sub-tree
// shows only the cgroups beneath its root.
func ownDir(root string, mounts []mount, match func(mount) bool, cg string) (string, error) {
	if slices.Contains(strings.Split(cg, "/"), "..") {
		// The kernel shows a cgroup outside our cgroup namespace as a
		// path going up from its root; no mount we see can reach it.
		return "", fmt.Errorf("our cgroup %s lies outside our cgroup namespace", cg)
	}
	for _, m := range mounts {
		if !match(m) {
			continue
		}
		var rel string
		switch {
		case m.Root == "/":
			rel = cg
		case cg == m.Root:
			rel = "/"
		case strings.HasPrefix(cg, m.Root+"/"):
			rel = cg[len(m.Root):]
		default:
			continue
		}
		return filepath.Join(root, m.MountPoint, rel), nil
	}
	return "", fmt.Errorf("our cgroup %s is not visible under any mount of its hierarchy", cg)
}

// mkdirBase creates the directory that holds the run groups, keeping one
// left by an earlier run.
func (m *Manager) mkdirBase(dir string, controllers []string) error {
	err := os.Mkdir(dir, 0o755) //nolint:gosec // cgroupfs directories are world-readable by design; the mode is ignored
	switch {
	case errors.Is(err, os.ErrExist):
		return nil
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: unable to create %s: %w (the cgroup is not delegated to uid %d)", ErrUnavailable, dir, err, os.Geteuid())
	case err != nil:
		return unavailable("unable to create %s: %v", dir, err)
	}
	if m.hooks != nil {
		return m.hooks.populate(dir, controllers)
	}
	return nil
}

func detectV2(opts Options, mounts []mount, members []membership) (*Manager, error) {
	i := slices.IndexFunc(members, func(mb membership) bool { return len(mb.Controllers) == 0 })
	if i < 0 {
		return nil, unavailable("%s has no cgroup v2 entry (0::/...)", opts.SelfCgroup)
	}
	cg := members[i].Path
	if path.Base(cg) == selfLeaf(opts.Prefix) {
		// An earlier Detect in this process moved us into our leaf.
		cg = path.Dir(cg)
	}
	own, err := ownDir(opts.Root, mounts, func(m mount) bool { return m.FSType == "cgroup2" }, cg)
	if err != nil {
		return nil, unavailable("%v", err)
	}
	data, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return nil, unavailable("unable to read the controllers of our cgroup: %v", err)
	}
	have := strings.Fields(string(data))
	if missing := without(v2Controllers, have); len(missing) > 0 {
		return nil, missingControllers(own, missing, have, cg == "/")
	}
	m := &Manager{version: V2, hooks: opts.hooks}
	base := filepath.Join(own, opts.Prefix)
	if err := m.mkdirBase(base, nil); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w; %s", err, delegateHint(own))
		}
		return nil, err
	}
	err = enableControllers(own, v2Controllers)
	if errors.Is(err, unix.EBUSY) {
		// The no-internal-process rule: a non-root cgroup that holds
		// processes cannot give controllers to its children.
		if err := m.evacuate(own, opts.Prefix); err != nil {
			return nil, err
		}
		err = enableControllers(own, v2Controllers)
	}
	if err != nil {
		return nil, delegationError(err, own)
	}
	if err := enableControllers(base, v2Controllers); err != nil {
		return nil, delegationError(err, own)
	}
	m.hiers = []hierarchy{{controllers: v2Controllers, base: base}}
	m.mem, m.pids, m.cpu, m.cpuacct, m.freezer = 0, 0, 0, 0, -1
	m.swapMax = existsAt(base, ctlMemorySwapMax.name)
	m.peak = existsAt(base, ctlMemoryPeak.name)
	m.killFile = existsAt(base, ctlKill.name)
	m.freezeFile = existsAt(base, ctlFreeze.name)
	return m, nil
}

func delegationError(err error, own string) error {
	if errors.Is(err, os.ErrPermission) {
		return unavailable("%v (the cgroup is not delegated to uid %d); %s", err, os.Geteuid(), delegateHint(own))
	}
	return unavailable("%v", err)
}

// delegateHint says how to give the cgroup own to this process's user,
// as systemd does for a unit with Delegate=yes: the directory and the
// files that create, move and enable belong to the user.
func delegateHint(own string) string {
	return fmt.Sprintf("to delegate it, run coderunner under systemd with Delegate=yes (systemd-run --user -p Delegate=yes --scope coderunner ..., or a unit with Delegate=yes), or as root: chown %d %s %s %s %s",
		os.Geteuid(), own, filepath.Join(own, "cgroup.procs"), filepath.Join(own, "cgroup.subtree_control"), filepath.Join(own, "cgroup.threads"))
}

// missingControllers is the error for a cgroup own that its parent gives
// not every controller coderunner needs: it names them, the parent's
// file that must enable them and the command that does. At the root of
// a cgroup namespace (a container's) the parent is out of sight, and the
// fix is the runtime's.
func missingControllers(own string, missing, have []string, nsRoot bool) error {
	enable := "+" + strings.Join(missing, " +")
	list := strings.Join(missing, ", ")
	ctrls := filepath.Join(own, "cgroup.controllers")
	if nsRoot {
		return unavailable("cgroup v2 controllers %s are not delegated to our cgroup: %s lists %q; the cgroup above ours, outside this cgroup namespace, must enable them: on the host, echo '%s' > <its directory>/cgroup.subtree_control (a container runtime does this when it gives the container its own cgroup, e.g. Docker with cgroupns=private on a cgroup v2 host)",
			list, ctrls, strings.Join(have, " "), enable)
	}
	parent := filepath.Join(filepath.Dir(own), "cgroup.subtree_control")
	return unavailable("cgroup v2 controllers %s are not delegated to our cgroup: %s lists %q; the cgroup above must enable them for its children: echo '%s' > %s (as the owner of that file), or run coderunner under systemd with Delegate=yes (systemd-run --user -p Delegate=yes --scope coderunner ..., or a unit with Delegate=yes)",
		list, ctrls, strings.Join(have, " "), enable, parent)
}

// selfLeaf names the cgroup a process moves itself into when it shares
// its cgroup with nobody; it is a sibling of the run groups' directory.
func selfLeaf(prefix string) string { return prefix + "-self" }

// evacuate moves this process out of own into a leaf beside the run
// groups, so that own may enable controllers. It moves nothing when own
// holds other processes: they are not ours to move.
func (m *Manager) evacuate(own, prefix string) error {
	data, err := os.ReadFile(filepath.Join(own, "cgroup.procs"))
	if err != nil {
		return unavailable("unable to list the processes of %s: %v", own, err)
	}
	procs := strings.Fields(string(data))
	self := strconv.Itoa(os.Getpid())
	if len(procs) != 1 || procs[0] != self {
		return unavailable("our cgroup %s holds other processes (%s), and cgroup v2 gives a cgroup that holds processes no controllers for sub-groups; run coderunner in a cgroup of its own, e.g. systemd-run --scope -p Delegate=yes",
			own, strings.Join(procs, " "))
	}
	leaf := filepath.Join(own, selfLeaf(prefix))
	if err := m.mkdirBase(leaf, nil); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), self); err != nil {
		return unavailable("unable to move ourselves out of %s: %v", own, err)
	}
	return nil
}

// enableControllers adds the controllers of need that dir's
// cgroup.subtree_control lacks.
func enableControllers(dir string, need []string) error {
	file := filepath.Join(dir, "cgroup.subtree_control")
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("unable to read %s: %w", file, err)
	}
	missing := without(need, strings.Fields(string(data)))
	if len(missing) == 0 {
		return nil
	}
	val := "+" + strings.Join(missing, " +")
	if err := writeFile(file, val); err != nil {
		return fmt.Errorf("unable to write %s=%s: %w", file, val, err)
	}
	return nil
}

// writeFile writes val to an existing file with one write(2). Unlike
// os.WriteFile it never creates the file: on cgroupfs a missing control
// file means a missing feature.
func writeFile(name, val string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(val)
	return errors.Join(err, f.Close())
}

// without returns the elements of want missing from have.
func without(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

func detectV1(opts Options, mounts []mount, members []membership) (*Manager, error) {
	m := &Manager{version: V1, hooks: opts.hooks}
	idx := map[string]*int{"memory": &m.mem, "pids": &m.pids, "cpu": &m.cpu, "cpuacct": &m.cpuacct, "freezer": &m.freezer}
	owns := map[string]string{}
	for _, c := range append(slices.Clone(v1Controllers), "freezer") {
		required := c != "freezer"
		*idx[c] = -1
		mi := slices.IndexFunc(members, func(mb membership) bool { return slices.Contains(mb.Controllers, c) })
		hasMount := slices.ContainsFunc(mounts, func(mt mount) bool {
			return mt.FSType == "cgroup" && slices.Contains(mt.SuperOptions, c)
		})
		if mi < 0 || !hasMount {
			if !required {
				continue
			}
			if !hasMount {
				return nil, unavailable("the cgroup v1 %s controller is not mounted", c)
			}
			return nil, unavailable("%s does not list the cgroup v1 %s controller", opts.SelfCgroup, c)
		}
		own, err := ownDir(opts.Root, mounts, func(mt mount) bool {
			return mt.FSType == "cgroup" && slices.Contains(mt.SuperOptions, c)
		}, members[mi].Path)
		if err != nil {
			if !required {
				continue
			}
			return nil, unavailable("%s: %v", c, err)
		}
		owns[c] = own
	}
	if id := currentIdentity(); id.uid != 0 {
		// An ordinary user creates groups only in a subtree root
		// delegated to it (delegate_linux.go).
		for _, c := range append(slices.Clone(v1Controllers), "freezer") {
			own, ok := owns[c]
			if !ok {
				continue
			}
			dir, err := delegatedV1Dir(own, c, id)
			switch {
			case err == nil:
				owns[c] = dir
			case c == "freezer":
				delete(owns, c)
			default:
				return nil, err
			}
		}
	}
	for _, c := range append(slices.Clone(v1Controllers), "freezer") {
		own, ok := owns[c]
		if !ok {
			continue
		}
		base := filepath.Join(own, opts.Prefix)
		// Co-mounted controllers share one hierarchy and one directory.
		h := slices.IndexFunc(m.hiers, func(h hierarchy) bool { return h.base == base })
		if h < 0 {
			h = len(m.hiers)
			m.hiers = append(m.hiers, hierarchy{base: base})
		}
		m.hiers[h].controllers = append(m.hiers[h].controllers, c)
		*idx[c] = h
	}
	for _, h := range m.hiers {
		if err := m.mkdirBase(h.base, h.controllers); err != nil {
			return nil, err
		}
	}
	m.memsw = existsAt(m.hiers[m.mem].base, ctlMemswLimit.name)
	return m, nil
}
