package cgroup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Manager creates run groups beneath our own cgroup. It holds no open
// resources and is safe for concurrent use.
type Manager struct {
	version Version
	// hiers are the hierarchies used: the single v2 tree, or one per v1
	// mount (co-mounted controllers share one).
	hiers []hierarchy
	// Indexes into hiers of the hierarchy of each controller; freezer is
	// -1 when not mounted (and always on v2, whose freezer is built in).
	mem, pids, cpu, cpuacct, freezer int
	// Optional files, probed once by Detect so that Create and Stats need
	// not.
	swapMax    bool // v2 memory.swap.max: swap accounting is on
	peak       bool // v2 memory.peak: kernel 5.19 or later
	killFile   bool // v2 cgroup.kill: kernel 5.14 or later
	freezeFile bool // v2 cgroup.freeze: kernel 5.2 or later
	memsw      bool // v1 memory.memsw.limit_in_bytes: swap accounting is on
	hooks      *hooks
}

// hierarchy is one cgroup tree a Manager uses.
type hierarchy struct {
	// controllers used from this tree.
	controllers []string
	// base is <our cgroup>/<Prefix> in this tree; run groups are its
	// children.
	base string
}

// Version returns the cgroup interface the Manager drives.
func (m *Manager) Version() Version { return m.version }

// Describe summarizes the Manager for people, as `coderunner doctor`
// shows it.
func (m *Manager) Describe() string {
	var ctrls, dirs []string
	for _, h := range m.hiers {
		ctrls = append(ctrls, h.controllers...)
		dirs = append(dirs, strings.Join(h.controllers, ",")+":"+h.base)
	}
	if m.version == V2 {
		dirs = []string{m.hiers[0].base}
	}
	s := fmt.Sprintf("cgroup %s (%s) at %s", m.version, strings.Join(ctrls, ", "), strings.Join(dirs, " "))
	var notes []string
	switch m.version {
	case V2:
		if !m.swapMax {
			notes = append(notes, "no swap accounting")
		}
		if !m.peak {
			notes = append(notes, "no memory.peak, peak memory sampled")
		}
		if !m.killFile {
			notes = append(notes, "no cgroup.kill")
		}
	case V1:
		if !m.memsw {
			notes = append(notes, "no swap accounting")
		}
		if m.freezer < 0 {
			notes = append(notes, "no freezer")
		}
	}
	if len(notes) > 0 {
		s += "; " + strings.Join(notes, "; ")
	}
	return s
}

// Create makes the group name, a unique run id, in every hierarchy and
// applies l. On error nothing it made is left behind.
func (m *Manager) Create(name string, l Limits) (_ *Group, retErr error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if err := validateLimits(l); err != nil {
		return nil, fmt.Errorf("unable to create cgroup %s: %w", name, err)
	}
	g := &Group{m: m, name: name, fds: make([]int, len(m.hiers)), leaf: -1}
	for i := range g.fds {
		g.fds[i] = -1
	}
	defer func() {
		if retErr != nil {
			g.closeFDs()
			for i := range g.made {
				_ = m.rmdir(m.hiers[i].base + "/" + name)
			}
		}
	}()
	for i, h := range m.hiers {
		dir := h.base + "/" + name
		if err := unix.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("unable to create cgroup %s: %w", dir, err)
		}
		g.made = i + 1
		if m.hooks != nil {
			ctrls := h.controllers
			if m.version == V2 {
				ctrls = nil
			}
			if err := m.hooks.populate(dir, ctrls); err != nil {
				return nil, err
			}
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("unable to open cgroup %s: %w", dir, err)
		}
		g.fds[i] = fd
	}
	g.openStats()
	if m.version == V2 {
		return g, g.limitV2(l)
	}
	return g, g.limitV1(l)
}

func (m *Manager) rmdir(dir string) error {
	if m.hooks != nil {
		return m.hooks.rmdir(dir)
	}
	return unix.Rmdir(dir)
}

// set writes the number v to the control file f of hierarchy h.
func (g *Group) set(h int, f ctl, v int64) error {
	var buf [24]byte
	return g.write(h, f, strconv.AppendInt(buf[:0], v, 10))
}

func (g *Group) write(h int, f ctl, val []byte) error {
	if err := writeAt(g.fds[h], f, val); err != nil {
		return fmt.Errorf("unable to write %s/%s/%s=%s: %w", g.m.hiers[h].base, g.name, f.name, val, err)
	}
	return nil
}

// RefillCPU writes the group's CPU bandwidth (l.CPUs) again, which the
// kernel takes as a new period with the whole quota: a group throttled by
// what an earlier run used in the current period runs again at once. A
// group kept from one run to the next calls it before each, so that no
// run waits on its predecessor's CPU time. Without a CPU limit it does
// nothing. On v1 it writes the quota alone: either file's write refills,
// and the period is the one Create or Update wrote.
func (g *Group) RefillCPU(l Limits) error {
	if l.CPUs <= 0 {
		return nil
	}
	if _, err := cpuQuota(l.CPUs); err != nil {
		return fmt.Errorf("unable to refill the CPU time of %s: %w", g.name, err)
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return fmt.Errorf("unable to refill the CPU time of %s: %w", g.name, ErrDestroyed)
	}
	if g.m.version == V1 {
		q, _ := cpuQuota(l.CPUs)
		return g.set(g.m.cpu, ctlCFSQuota, q)
	}
	return g.setCPU(l.CPUs)
}

// setCPU writes the CPU bandwidth of cpus cores, validated by the caller:
// cpu.max on v2, the period and the quota on v1.
func (g *Group) setCPU(cpus float64) error {
	q, _ := cpuQuota(cpus)
	if g.m.version == V2 {
		var buf [32]byte
		b := strconv.AppendInt(buf[:0], q, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, cpuPeriod, 10)
		return g.write(0, ctlCPUMax, b)
	}
	if err := g.set(g.m.cpu, ctlCFSPeriod, cpuPeriod); err != nil {
		return err
	}
	return g.set(g.m.cpu, ctlCFSQuota, q)
}

func (g *Group) limitV2(l Limits) error {
	m := g.m
	if l.Memory > 0 {
		if err := g.set(0, ctlMemoryMax, l.Memory); err != nil {
			return err
		}
		if m.swapMax {
			if err := g.set(0, ctlMemorySwapMax, 0); err != nil {
				return err
			}
		}
	}
	if l.Processes > 0 {
		if err := g.set(0, ctlPidsMax, int64(l.Processes)); err != nil {
			return err
		}
	}
	if l.CPUs > 0 {
		return g.setCPU(l.CPUs) // validated by Create
	}
	return nil
}

func (g *Group) limitV1(l Limits) error {
	m := g.m
	if l.Memory > 0 {
		if err := g.setMemoryV1(l.Memory); err != nil {
			return err
		}
		// The kernel refuses swappiness where the hierarchy does not
		// allow it per group; memsw already keeps the group off swap.
		if err := g.set(m.mem, ctlSwappiness, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return err
		}
	}
	if l.Processes > 0 {
		if err := g.set(m.pids, ctlPidsMax, int64(l.Processes)); err != nil {
			return err
		}
	}
	if l.CPUs > 0 {
		return g.setCPU(l.CPUs) // validated by Create
	}
	return nil
}

// setMemoryV1 sets the memory limit and, where the hierarchy has it, the
// memory plus swap limit to the same value, which leaves no room for swap.
// The memory limit may never exceed memory plus swap: going down it is set
// first, going up (a group limited before) second.
func (g *Group) setMemoryV1(v int64) error {
	m := g.m
	err := g.set(m.mem, ctlMemLimit, v)
	if !m.memsw {
		return err
	}
	if errors.Is(err, unix.EINVAL) {
		if err := g.set(m.mem, ctlMemswLimit, v); err != nil {
			return err
		}
		return g.set(m.mem, ctlMemLimit, v)
	}
	if err != nil {
		return err
	}
	return g.set(m.mem, ctlMemswLimit, v)
}

// CPU weights of SetBackground: the least the kernel takes, and its default.
const (
	backgroundSharesV1 = 2
	defaultSharesV1    = 1024
	backgroundWeightV2 = 1
	defaultWeightV2    = 100
)

// SetBackground gives the group the least CPU weight (on), so that it runs
// only when other groups leave the CPU idle, or the default weight back
// (off). A weight ranks the group against the others; within it, nice
// values rank its processes.
func (g *Group) SetBackground(on bool) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return fmt.Errorf("unable to set the CPU weight of %s: %w", g.name, ErrDestroyed)
	}
	if g.m.version == V2 {
		w := int64(defaultWeightV2)
		if on {
			w = backgroundWeightV2
		}
		return g.set(0, ctlCPUWeight, w)
	}
	shares := int64(defaultSharesV1)
	if on {
		shares = backgroundSharesV1
	}
	return g.set(g.m.cpu, ctlCPUShares, shares)
}

// Update changes the limits of a group: one created without them (Create
// with a zero Limits), so that a group can be made ahead of need and limited
// when its run is known, or one limited before, up or down. Zero fields
// leave a resource as it is.
func (g *Group) Update(l Limits) error {
	if err := validateLimits(l); err != nil {
		return fmt.Errorf("unable to update cgroup %s: %w", g.name, err)
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return fmt.Errorf("unable to update %s: %w", g.name, ErrDestroyed)
	}
	if g.m.version == V2 {
		return g.limitV2(l)
	}
	return g.limitV1(l)
}
