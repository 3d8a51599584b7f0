package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// fakeContainer is a containerEnv over a map of files.
func fakeContainer(files map[string]string, env map[string]string, userns error) containerEnv {
	return containerEnv{
		readFile: func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, os.ErrNotExist
		},
		exists:    func(p string) bool { _, ok := files[p]; return ok },
		getenv:    func(k string) string { return env[k] },
		newUserNS: func() error { return userns },
	}
}

// Mount lines as Docker makes them with its default settings on cgroup v1.
const (
	mountRoot  = "600 500 0:50 / / ro,relatime master:1 - overlay overlay rw\n"
	mountProc  = "601 600 0:52 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	mountMasks = "602 601 0:52 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw\n" +
		"603 601 0:52 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n" +
		"604 601 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw\n" +
		"605 601 0:60 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n" +
		"606 601 0:5 /null /proc/timer_list rw,nosuid - devtmpfs udev rw\n"
	mountCgV1   = "610 600 0:30 /docker/abc /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,memory\n"
	mountCgV2RO = "610 600 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n"
	mountCgV2RW = "610 600 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n"
)

func checkNamed(t *testing.T, rep *containerReport, name string) containerCheck {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, rep.Checks)
	return containerCheck{}
}

func TestContainerOutsideAny(t *testing.T) {
	env := fakeContainer(map[string]string{"/proc/1/cgroup": "0::/init.scope\n"}, nil, nil)
	if rep := probeContainer(env); rep != nil {
		t.Fatalf("report %+v outside a container", rep)
	}
	var buf bytes.Buffer
	writeContainer(&buf, nil)
	if buf.Len() != 0 {
		t.Fatalf("text %q outside a container", buf.String())
	}
}

func TestContainerRuntime(t *testing.T) {
	for _, tc := range []struct {
		files map[string]string
		env   map[string]string
		want  string
	}{
		{map[string]string{"/.dockerenv": ""}, nil, "docker"},
		{map[string]string{"/run/.containerenv": ""}, nil, "podman"},
		{map[string]string{"/.dockerenv": ""}, map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "kubernetes"},
		{nil, map[string]string{"container": "systemd-nspawn"}, "systemd-nspawn"},
		{map[string]string{"/proc/1/cgroup": "0::/kubepods/burstable/pod1/abc\n"}, nil, "kubepods"},
		{nil, nil, ""},
	} {
		if got := containerRuntime(fakeContainer(tc.files, tc.env, nil)); got != tc.want {
			t.Errorf("files %v env %v: runtime %q, want %q", tc.files, tc.env, got, tc.want)
		}
	}
}

// Docker's defaults withhold everything a sandbox needs; each is named
// with the setting that gives it back.
func TestContainerDockerDefaults(t *testing.T) {
	env := fakeContainer(map[string]string{
		"/.dockerenv":                        "",
		"/proc/self/mountinfo":               mountRoot + mountProc + mountMasks + mountCgV1,
		"/proc/self/status":                  "Name:\tcoderunner\nNoNewPrivs:\t0\nSeccomp:\t2\nSeccomp_filters:\t1\n",
		"/proc/sys/user/max_user_namespaces": "63429\n",
		"/proc/self/attr/apparmor/current":   "docker-default (enforce)\n",
	}, nil, syscall.EPERM)
	rep := probeContainer(env)
	if rep == nil || rep.Runtime != "docker" {
		t.Fatalf("report %+v, want docker's", rep)
	}
	for name, fix := range map[string]string{
		"/proc":           "--security-opt systempaths=unconfined",
		"user namespaces": "--security-opt seccomp=deploy/seccomp.json",
		"AppArmor":        "--security-opt apparmor=unconfined",
		"cgroup":          "coderunner init --writable-cgroup",
	} {
		c := checkNamed(t, rep, name)
		if c.OK || !strings.Contains(c.Fix, fix) {
			t.Errorf("%s: %+v, want withheld with a fix naming %q", name, c, fix)
		}
	}
	if c := checkNamed(t, rep, "/proc"); !strings.Contains(c.Detail, "/proc/bus, /proc/sys, /proc/kcore, /proc/acpi, and 1 more") {
		t.Errorf("/proc detail %q does not list the masks", c.Detail)
	}
	var buf bytes.Buffer
	writeContainer(&buf, rep)
	for _, want := range []string{"Container (docker)", "[FAIL] /proc: masked by the runtime",
		"[FAIL] user namespaces: refused (operation not permitted) by the container's seccomp profile",
		"fix: docker run --security-opt seccomp=deploy/seccomp.json"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"fix":"docker run --security-opt systempaths=unconfined`) {
		t.Errorf("JSON %s (%v)", b, err)
	}
}

// With deploy/run-container.sh's settings only the cgroup is withheld,
// which the rlimits opt-out covers.
func TestContainerLeastPrivilege(t *testing.T) {
	env := fakeContainer(map[string]string{
		"/.dockerenv":          "",
		"/proc/self/mountinfo": mountRoot + mountProc + mountCgV1,
		"/proc/self/status":    "Seccomp:\t2\n",
	}, nil, nil)
	rep := probeContainer(env)
	for _, name := range []string{"/proc", "user namespaces"} {
		if c := checkNamed(t, rep, name); !c.OK || c.Fix != "" {
			t.Errorf("%s: %+v, want ok", name, c)
		}
	}
	if len(rep.Checks) != 3 {
		t.Errorf("checks %+v: no AppArmor or SELinux label, so no such check", rep.Checks)
	}
}

func TestContainerUserNamespacesOff(t *testing.T) {
	env := fakeContainer(map[string]string{
		"/.dockerenv": "", "/proc/sys/user/max_user_namespaces": "0\n", "/proc/self/status": "Seccomp:\t2\n",
	}, nil, syscall.ENOSPC)
	c := checkNamed(t, probeContainer(env), "user namespaces")
	if c.OK || c.Fix != fixUserNS || !strings.Contains(c.Detail, "max_user_namespaces is 0") {
		t.Errorf("%+v", c)
	}
	// Refused with no seccomp filter: neither the sysctl nor the profile
	// is known to be the cause, so both likely fixes are named.
	env = fakeContainer(map[string]string{"/.dockerenv": "", "/proc/self/status": "Seccomp:\t0\n"}, nil, syscall.EPERM)
	c = checkNamed(t, probeContainer(env), "user namespaces")
	if c.OK || !strings.Contains(c.Fix, "seccomp=") || !strings.Contains(c.Fix, "apparmor=") {
		t.Errorf("%+v", c)
	}
}

func TestContainerLabels(t *testing.T) {
	for _, tc := range []struct {
		file, label, name string
		ok                bool
	}{
		{"/proc/self/attr/current", "system_u:system_r:container_t:s0:c1,c2\x00", "SELinux", false},
		{"/proc/self/attr/current", "system_u:system_r:spc_t:s0\x00", "LSM", true},
		{"/proc/self/attr/apparmor/current", "coderunner (complain)\n", "AppArmor", true},
		{"/proc/self/attr/apparmor/current", "unconfined\n", "", true},
	} {
		env := fakeContainer(map[string]string{"/.dockerenv": "", tc.file: tc.label}, nil, nil)
		c, ok := lsmCheck(env)
		if tc.name == "" {
			if ok {
				t.Errorf("%q: check %+v, want none", tc.label, c)
			}
			continue
		}
		if !ok || c.Name != tc.name || c.OK != tc.ok || (!c.OK && c.Fix == "") {
			t.Errorf("%q: %+v, want %s ok=%v", tc.label, c, tc.name, tc.ok)
		}
	}
}

func TestContainerCgroupV2(t *testing.T) {
	c, ok := cgroupCheck(mountRoot + mountCgV2RO)
	if !ok || c.OK || c.Fix != fixCgroupV2 {
		t.Errorf("read-only v2: %+v", c)
	}
	c, ok = cgroupCheck(mountRoot + mountCgV2RW)
	if !ok || !c.OK {
		t.Errorf("read-write v2: %+v", c)
	}
	// A cgroup file system mounted elsewhere is not the container's.
	if c, ok = cgroupCheck("610 600 0:30 / /mnt/cg rw - cgroup2 cgroup2 rw\n"); ok {
		t.Errorf("cgroup outside /sys/fs/cgroup: %+v", c)
	}
}

// The probe itself, on this machine: a clone into new namespaces, which a
// machine whose sandboxes work allows.
func TestProbeUserNS(t *testing.T) {
	err := probeUserNS()
	if err != nil && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("probe: %v, want nil or a refusal", err)
	}
	if os.Geteuid() == 0 && err != nil {
		t.Fatalf("root cannot make a user namespace here: %v", err)
	}
}
