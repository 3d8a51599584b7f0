package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// The committed profile is what this command writes: a change of the
// call list or of the library's default is a change of deploy/seccomp.json.
func TestProfileIsCurrent(t *testing.T) {
	want, err := os.ReadFile("../../deploy/seccomp.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("deploy/seccomp.json is not what tools/containerseccomp writes: go run ./tools/containerseccomp > deploy/seccomp.json")
	}
}

// rules lists the rules of p that name call.
func rules(p *seccomp.Seccomp, call string) []*seccomp.Syscall {
	var out []*seccomp.Syscall
	for _, r := range p.Syscalls {
		if slices.Contains(r.Names, call) {
			out = append(out, r)
		}
	}
	return out
}

func TestSandboxCallsAllowedWithoutCapabilities(t *testing.T) {
	p := profile()
	for _, call := range sandboxCalls {
		rs := rules(p, call)
		if len(rs) != 1 {
			t.Errorf("%s is named by %d rules, want exactly the one allowing it (two rules for one call make the runtime refuse the profile)", call, len(rs))
			continue
		}
		r := rs[0]
		if r.Action != specs.ActAllow || len(r.Args) > 0 || r.Includes != nil || r.Excludes != nil {
			t.Errorf("%s: %+v, want allowed without conditions", call, r)
		}
	}
}

// withoutSandboxCalls is rs with the sandbox calls taken out of their
// names, as profile takes them out.
func withoutSandboxCalls(rs []*seccomp.Syscall) []*seccomp.Syscall {
	for _, r := range rs {
		r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return slices.Contains(sandboxCalls, n) })
	}
	return rs
}

// Everything else is Docker's default, untouched: the calls the default
// keeps for CAP_SYS_ADMIN, or never allows, stay so.
func TestEverythingElseIsDockersDefault(t *testing.T) {
	p, d := profile(), seccomp.DefaultProfile()
	if p.DefaultAction != specs.ActErrno || p.DefaultAction != d.DefaultAction {
		t.Fatalf("default action %s, want Docker's %s", p.DefaultAction, d.DefaultAction)
	}
	for _, call := range []string{"bpf", "perf_event_open", "quotactl", "syslog", "kexec_load", "init_module", "keyctl", "add_key", "ptrace", "userfaultfd", "chroot", "setns", "fsopen", "setdomainname"} {
		got, _ := json.Marshal(rules(p, call))
		want, _ := json.Marshal(withoutSandboxCalls(rules(d, call)))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: rules %s, Docker's default has %s", call, got, want)
		}
	}
	if n := len(rules(p, "keyctl")); n != 0 {
		t.Errorf("keyctl is named by %d rules; Docker's default denies it", n)
	}
}
