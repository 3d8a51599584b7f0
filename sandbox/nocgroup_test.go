package sandbox

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestNoCgroupPolicy(t *testing.T) {
	cause := errors.New("cgroup v1 memory: not delegated")
	describe := func() string { return "cgroup v2 (memory, pids, cpu) at /x" }
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	usable, warning := NewNoCgroupPolicy(nil, false)
	if warning != "" || usable.Refusal() != nil || usable.Admit(log, "native") != nil {
		t.Errorf("usable cgroups: warning %q, refusal %v", warning, usable.Refusal())
	}
	if c := usable.Check(describe); !c.OK || c.Detail != describe() {
		t.Errorf("usable cgroups: check %+v", c)
	}

	refusing, warning := NewNoCgroupPolicy(cause, false)
	err := refusing.Admit(log, "native")
	if warning != RefusedWarning || !errors.Is(err, ErrNoCgroup) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, cause) || !errors.Is(refusing.Refusal(), err) {
		t.Errorf("refusing: warning %q, admit %v", warning, err)
	}
	if c := refusing.Check(describe); c.OK || !strings.Contains(c.Detail, cause.Error()) || !strings.HasSuffix(c.Detail, "every run is refused") {
		t.Errorf("refusing: check %+v", c)
	}

	allowing, warning := NewNoCgroupPolicy(cause, true)
	if warning != RlimitsOnlyWarning(cause) || allowing.Refusal() != nil {
		t.Errorf("allowing: warning %q, refusal %v", warning, allowing.Refusal())
	}
	for range 3 {
		if err := allowing.Admit(log, "bwrap"); err != nil {
			t.Fatalf("allowing: admit %v", err)
		}
	}
	if n := strings.Count(logs.String(), "event=rlimits_only"); n != 1 {
		t.Errorf("allowing: logged %d times, want once:\n%s", n, logs.String())
	}
	if c := allowing.Check(describe); c.OK || !strings.Contains(c.Detail, "per-process rlimits") {
		t.Errorf("allowing: check %+v", c)
	}
}
