package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/coderunner/coderunner/internal/mountpoint"
)

// containerReport is what doctor says of the container it runs in: what
// the runtime withheld that the sandboxes need, each with the setting that
// gives it back (deploy/run-container.sh applies them all).
type containerReport struct {
	// Runtime names the container runtime: docker, podman, kubernetes, or
	// what the container variable says.
	Runtime string           `json:"runtime"`
	Checks  []containerCheck `json:"checks"`
}

// containerCheck is one thing a sandbox needs from its container.
type containerCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Fix is the runtime setting that gives it, when it is withheld.
	Fix string `json:"fix,omitempty"`
}

// containerEnv is what the container probe reads; tests give their own.
type containerEnv struct {
	readFile func(string) ([]byte, error)
	exists   func(string) bool
	getenv   func(string) string
	// newUserNS starts a process in a new user and mount namespace and
	// waits for it; the error is why it could not.
	newUserNS func() error
}

// hostContainerEnv reads the machine doctor runs on.
var hostContainerEnv = containerEnv{
	readFile: os.ReadFile,
	exists: func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	},
	getenv:    os.Getenv,
	newUserNS: probeUserNS,
}

// Fixes named by the container checks.
const (
	fixProc      = "docker run --security-opt systempaths=unconfined (Kubernetes: securityContext.procMount: Unmasked)"
	fixSeccomp   = "docker run --security-opt seccomp=deploy/seccomp.json (Kubernetes: a Localhost seccompProfile with that file)"
	fixUserNS    = "on the host: sysctl -w user.max_user_namespaces=15000"
	fixAppArmor  = "docker run --security-opt apparmor=unconfined, or an AppArmor profile of your own that allows mount, pivot_root and userns"
	fixSELinux   = "docker run --security-opt label=type:container_engine_t (container-selinux 2.180 or later), or --security-opt label=disable"
	fixCgroup    = "run the container as root with CAP_SYS_ADMIN and --cgroupns=private, under coderunner init --writable-cgroup (deploy/run-container.sh does); or accept rlimits alone with CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true, bounding the whole executor with docker run --memory and --pids-limit"
	fixCgroupV2  = fixCgroup + "; on cgroup v2 a runtime that delegates the container's cgroup to it read-write also does"
	procDetailOK = "not masked: a sandbox can mount a /proc of its own"
)

// probeContainer says what the container doctor runs in withheld, or nil
// outside a container.
func probeContainer(env containerEnv) *containerReport {
	rt := containerRuntime(env)
	if rt == "" {
		return nil
	}
	mountinfo, _ := env.readFile("/proc/self/mountinfo")
	rep := &containerReport{Runtime: rt}
	rep.Checks = append(rep.Checks, procCheck(string(mountinfo)), userNSCheck(env))
	if c, ok := lsmCheck(env); ok {
		rep.Checks = append(rep.Checks, c)
	}
	if c, ok := cgroupCheck(string(mountinfo)); ok {
		rep.Checks = append(rep.Checks, c)
	}
	return rep
}

// containerRuntime names the runtime of the container this process runs
// in, or "" when it seems to run in none.
func containerRuntime(env containerEnv) string {
	switch {
	case env.getenv("KUBERNETES_SERVICE_HOST") != "":
		return "kubernetes"
	case env.exists("/.dockerenv"):
		return "docker"
	case env.exists("/run/.containerenv"):
		return "podman"
	case env.getenv("container") != "":
		return env.getenv("container")
	}
	cg, _ := env.readFile("/proc/1/cgroup")
	for _, rt := range []string{"kubepods", "docker", "containerd", "libpod", "lxc"} {
		if strings.Contains(string(cg), rt) {
			return rt
		}
	}
	return ""
}

// procCheck finds the paths a runtime covers under /proc (Docker's masked
// and read-only paths): the kernel lets a new PID namespace mount a /proc
// of its own only when no part of the existing one is covered.
func procCheck(mountinfo string) containerCheck {
	var covered []string
	for _, m := range mountpoint.ParseInfo(mountinfo) {
		if strings.HasPrefix(m.Point, "/proc/") && !slices.Contains(covered, m.Point) {
			covered = append(covered, m.Point)
		}
	}
	if len(covered) == 0 {
		return containerCheck{Name: "/proc", OK: true, Detail: procDetailOK}
	}
	shown := covered
	if len(shown) > 4 {
		shown = append(slices.Clone(shown[:4]), fmt.Sprintf("and %d more", len(covered)-4))
	}
	return containerCheck{Name: "/proc", Detail: "masked by the runtime (" + strings.Join(shown, ", ") +
		"): the kernel refuses a sandbox a /proc of its own", Fix: fixProc}
}

// userNSCheck tries a user namespace, and names what refused it.
func userNSCheck(env containerEnv) containerCheck {
	err := env.newUserNS()
	if err == nil {
		return containerCheck{Name: "user namespaces", OK: true, Detail: "a sandbox can make its namespaces"}
	}
	c := containerCheck{Name: "user namespaces"}
	maxNS, _ := env.readFile("/proc/sys/user/max_user_namespaces")
	status, _ := env.readFile("/proc/self/status")
	switch {
	case strings.TrimSpace(string(maxNS)) == "0":
		c.Detail, c.Fix = fmt.Sprintf("refused (%v): user.max_user_namespaces is 0", err), fixUserNS
	case seccompFiltered(string(status)) && errors.Is(err, syscall.EPERM):
		c.Detail = fmt.Sprintf("refused (%v) by the container's seccomp profile: Docker's default allows unshare, clone with namespace flags and mount only with CAP_SYS_ADMIN", err)
		c.Fix = fixSeccomp
	default:
		c.Detail = fmt.Sprintf("refused: %v", err)
		c.Fix = fixSeccomp + "; and if that is not it, " + fixAppArmor
	}
	return c
}

// seccompFiltered reports whether /proc/self/status says a seccomp filter
// is on this process.
func seccompFiltered(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v) == "2"
		}
	}
	return false
}

// lsmCheck reads this process's AppArmor profile or SELinux label; ok is
// false when neither confines it.
func lsmCheck(env containerEnv) (containerCheck, bool) {
	b, err := env.readFile("/proc/self/attr/apparmor/current")
	if err != nil || len(b) == 0 {
		b, _ = env.readFile("/proc/self/attr/current")
	}
	label := strings.TrimRight(string(b), "\x00\n ")
	switch {
	case label == "" || label == "unconfined" || label == "kernel":
		return containerCheck{}, false
	case strings.HasSuffix(label, " (enforce)"):
		return containerCheck{Name: "AppArmor", Detail: "profile " + label +
			": Docker's docker-default denies mount, which every sandbox needs", Fix: fixAppArmor}, true
	case strings.HasSuffix(label, " (complain)"):
		return containerCheck{Name: "AppArmor", OK: true, Detail: "profile " + label + " only logs"}, true
	}
	if f := strings.Split(label, ":"); len(f) >= 3 && f[2] == "container_t" {
		return containerCheck{Name: "SELinux", Detail: "label " + label +
			": container_t may not mount, which every sandbox needs", Fix: fixSELinux}, true
	}
	return containerCheck{Name: "LSM", OK: true, Detail: "label " + label}, true
}

// cgroupCheck says whether the container's cgroup is writable; ok is false
// when no cgroup is mounted at all.
func cgroupCheck(mountinfo string) (containerCheck, bool) {
	var v2, found, rw bool
	for _, m := range mountpoint.ParseInfo(mountinfo) {
		if m.FSType != "cgroup" && m.FSType != "cgroup2" {
			continue
		}
		if m.Point != "/sys/fs/cgroup" && !strings.HasPrefix(m.Point, "/sys/fs/cgroup/") {
			continue
		}
		found = true
		v2 = v2 || m.FSType == "cgroup2"
		rw = rw || slices.Contains(m.Options, "rw")
	}
	switch {
	case !found:
		return containerCheck{}, false
	case rw:
		return containerCheck{Name: "cgroup", OK: true, Detail: "mounted read-write: each run can have a cgroup of its own"}, true
	}
	c := containerCheck{Name: "cgroup", Detail: "mounted read-only: no cgroup per run, so memory, process and CPU limits are per process (rlimits)"}
	c.Fix = fixCgroup
	if v2 {
		c.Fix = fixCgroupV2
	}
	return c, true
}

// probeUserNS clones a process into a new user and mount namespace, as
// a sandbox's first step, and has it execute a path that cannot exist (no
// file can be made in /proc's root): ENOENT, the exec's answer, means the
// namespaces were made; any other error is the clone's refusal. Nothing
// runs in the namespace.
func probeUserNS() error {
	_, err := syscall.ForkExec("/proc/coderunner-userns-probe", []string{"coderunner-userns-probe"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS},
	})
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err == nil {
		return errors.New("/proc/coderunner-userns-probe exists")
	}
	return err
}

// writeContainer prints the container section of doctor's text.
func writeContainer(w io.Writer, rep *containerReport) {
	if rep == nil {
		return
	}
	fmt.Fprintf(w, "Container (%s): what the sandboxes need from it\n", rep.Runtime)
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "    [%s] %s: %s\n", mark, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "           fix: %s\n", c.Fix)
		}
	}
}
