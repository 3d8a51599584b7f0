package execute

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestResultJSON(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		file   string
		limits ExecutionLimits
		res    *sandbox.Result
		err    error
	}{
		{"success.json", ExecutionLimits{}, &sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte("Hello, World!\n"),
			WallTime: 12 * ms, CPUTime: 9 * ms, PeakMemory: 7_800 * 1024 * 1024 / 1000,
			Samples: []sandbox.Sample{{At: 12 * ms, CPUTime: 9 * ms, Memory: 512 * 1024}}}, nil},
		{"timeout.json", ExecutionLimits{TimeLimit: 2}, &sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "wall", ExitCode: -1, Signal: syscall.SIGKILL,
			Stdout: []byte("Partial output if any...\n"), WallTime: 2 * time.Second, CPUTime: 10 * ms, PeakMemory: 3 << 20,
			Samples: []sandbox.Sample{{At: time.Second, CPUTime: 5 * ms, Memory: 3 << 20}, {At: 2 * time.Second, CPUTime: 10 * ms, Memory: 3 << 20}}}, nil},
		{"memory.json", ExecutionLimits{MemoryLimit: 32}, &sandbox.Result{Status: sandbox.StatusMemoryLimit, ExitCode: -1, Signal: syscall.SIGKILL, MemoryExceeded: true,
			Stderr: []byte("Killed\n"), WallTime: 300 * ms, CPUTime: 280 * ms, PeakMemory: 32 << 20,
			Samples: []sandbox.Sample{{At: 300 * ms, CPUTime: 280 * ms, Memory: 32 << 20}}}, nil},
		{"output_limit.json", ExecutionLimits{MaxOutputChars: 4}, &sandbox.Result{Status: sandbox.StatusOutputLimit, ExitCode: -1, Signal: syscall.SIGKILL,
			Stdout: []byte("yyyy"), StdoutTruncated: true, WallTime: 5 * ms, CPUTime: 5 * ms, PeakMemory: 1 << 20,
			Samples: []sandbox.Sample{{At: 5 * ms, CPUTime: 5 * ms, Memory: 1 << 20}}}, nil},
		{"setup_error.json", ExecutionLimits{}, nil, sandbox.ErrSetup},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tab := testTable(t)
			fb := &sandboxtest.Fake{T: t, HostWorkspace: true, Steps: []sandboxtest.Step{func(context.Context, *sandbox.Spec) (*sandbox.Result, error) { return tt.res, tt.err }}}
			e := New(fb, tab, Options{TempDir: t.TempDir()})
			res, err := e.Execute(context.Background(), Request{Language: "script", Code: "x", Limits: tt.limits})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.file, marshal(t, res))
		})
	}
}

// TestResultJSONFields pins the exact key set of the result, so that a renamed
// or added field is a deliberate change.
func TestResultJSONFields(t *testing.T) {
	id := "s1"
	res := Result{SessionID: &id, Artifacts: []Artifact{{
		Path: "plots/a.png", Size: 3, MimeType: "image/png", Type: "artifact",
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Checksum: "sha256:00",
	}}}
	golden(t, "artifacts.json", marshal(t, res))

	var m map[string]json.RawMessage
	if err := json.Unmarshal(marshal(t, Result{}), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"backend", "error_message", "execution_time", "exit_code", "language", "limits_applied",
		"memory_exceeded", "resource_usage", "session_id", "status", "stderr", "stdout", "truncated"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v (artifacts omitted when empty)", keys, want)
	}
	if string(m["error_message"]) != "null" || string(m["session_id"]) != "null" {
		t.Errorf("error_message %s session_id %s, want null", m["error_message"], m["session_id"])
	}
}
