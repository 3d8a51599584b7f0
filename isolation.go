package coderunner

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/coderunner/coderunner/sandbox"
)

// IsolatedResult is the Result of SandboxProcessIsolation with the
// isolation the program ran under.
type IsolatedResult struct {
	*Result
	// Isolation describes the sandbox.
	Isolation Isolation `json:"isolation"`
}

// Isolation is the isolation status SandboxProcessIsolation reports: what
// kept the program apart from this
// process and the machine.
type Isolation struct {
	// Isolated is true when the program ran in its own sandboxed process
	// tree, never in this process: the backend works here and ran it.
	Isolated bool `json:"isolated"`
	// Backend is the sandbox backend's name.
	Backend string `json:"backend"`
	// Checks are the facilities the backend found (namespaces, cgroups,
	// seccomp …), as doctor shows them.
	Checks []sandbox.Check `json:"checks"`
	// Warnings are the weaknesses of the backend here and of this run.
	Warnings []string `json:"warnings"`
}

// SandboxProcessIsolation runs code with the default CodeRunner; see
// CodeRunner.SandboxProcessIsolation.
func SandboxProcessIsolation(ctx context.Context, language, code string, limits ExecutionLimits, opts ...Option) (*IsolatedResult, error) {
	c, err := Default()
	if err != nil {
		res, err := unavailable(language, err, opts)
		return &IsolatedResult{Result: res, Isolation: Isolation{Checks: []sandbox.Check{}, Warnings: []string{}}}, err
	}
	return c.SandboxProcessIsolation(ctx, language, code, limits, opts...)
}

// SandboxProcessIsolation runs ExecuteWithLimits in a fresh sandbox that shares nothing with earlier
// runs (a session option is ignored), with the isolation status. The
// program always runs in a separate process tree with its own namespaces,
// cgroup and seccomp filter as the backend provides them; Isolation says
// which.
func (c *CodeRunner) SandboxProcessIsolation(ctx context.Context, language, code string, limits ExecutionLimits, opts ...Option) (*IsolatedResult, error) {
	req := c.request(language, code, limits, opts)
	req.SessionID = nil
	iso := c.isolation()
	res, err := c.parts.Executor.Execute(ctx, req)
	if err != nil {
		res, err = refused(req, c.parts.Backend.Name(), c.parts.Languages, err)
		iso.Isolated = false
	} else {
		iso.Isolated = iso.Isolated && res.Status != StatusSetupError
		iso.Warnings = append(iso.Warnings, res.Warnings...)
	}
	return &IsolatedResult{Result: res, Isolation: iso}, err
}

// isolation is the backend's report, probed once.
func (c *CodeRunner) isolation() Isolation {
	c.probeOnce.Do(func() {
		b := c.parts.Backend
		c.probe = sandbox.Report{Backend: b.Name(), Available: true}
		if p, ok := b.(sandbox.Prober); ok {
			c.probe = p.Probe(context.Background())
		}
	})
	iso := Isolation{
		Isolated: c.probe.Available,
		Backend:  c.parts.Backend.Name(),
		Checks:   append([]sandbox.Check{}, c.probe.Checks...),
		Warnings: append([]string{}, c.probe.Warnings...),
	}
	return iso
}

// MarshalJSON writes the result's object with "isolation" added: the
// embedded Result's own MarshalJSON would leave it out.
func (r IsolatedResult) MarshalJSON() ([]byte, error) {
	iso, err := json.Marshal(r.Isolation)
	if err != nil {
		return nil, err
	}
	if r.Result == nil {
		return append(append([]byte(`{"isolation":`), iso...), '}'), nil
	}
	b, err := json.Marshal(r.Result)
	if err != nil {
		return nil, err
	}
	b = append(bytes.TrimSuffix(b, []byte("}")), `,"isolation":`...)
	return append(append(b, iso...), '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *IsolatedResult) UnmarshalJSON(b []byte) error {
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	var iso struct {
		Isolation Isolation `json:"isolation"`
	}
	if err := json.Unmarshal(b, &iso); err != nil {
		return err
	}
	r.Result, r.Isolation = &res, iso.Isolation
	return nil
}
