package lang

import (
	"math"
	"slices"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

func TestArgs(t *testing.T) {
	java, _ := Default().Lookup("java")
	c, _ := Default().Lookup("c")
	py, _ := Default().Lookup("python")
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"c compile", c.CompileArgs(Vars{Source: "/workspace/s.c", Binary: "/workspace/s"}),
			[]string{"-O2", "-std=c11", "-pipe", "-o", "/workspace/s", "/workspace/s.c", "-lm"}},
		{"c run", c.RunArgs(Vars{}), []string{"/workspace/main"}},
		{"python run", py.RunArgs(Vars{Source: "/workspace/a.py"}), []string{"-B", "-s", "/workspace/a.py"}},
		{"python compile", py.CompileArgs(Vars{}), nil},
		{"java run", java.RunArgs(Vars{Class: "Main", MemoryMB: 128}),
			[]string{"-Xmx88m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:-UsePerfData",
				"-XX:MaxRAM=128m", "-XX:MaxRAMPercentage=75", "-cp", "/workspace", "Main"}},
		{"java compile source follows class", java.CompileArgs(Vars{Class: "Main"})[len(java.Compile)-1:], []string{"/workspace/Main.java"}},
	}
	for _, tt := range tests {
		got := tt.got
		if len(tt.want) > 0 && len(got) > 0 && got[0] != tt.want[0] {
			got = got[1:] // argv[0] is the discovered tool
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, l := range Default().All() {
		for _, argv := range [][]string{l.CompileArgs(Vars{}), l.RunArgs(Vars{})} {
			if len(argv) > 0 && argv[0][0] != '/' {
				t.Errorf("%s: argv[0] %q is not absolute", l.ID, argv[0])
			}
		}
	}
}

func TestSourceName(t *testing.T) {
	java, _ := Default().Lookup("java")
	c, _ := Default().Lookup("cpp")
	tests := []struct {
		l    *Language
		code string
		want string
	}{
		{java, "public class Hello { public static void main(String[] a) {} }", "Hello.java"},
		{java, "class A {}", "Solution.java"},
		{c, "public class Hello {}", "main.cpp"},
	}
	for _, tt := range tests {
		if got := tt.l.SourceName(tt.code); got != tt.want {
			t.Errorf("%s SourceName(%q) = %q, want %q", tt.l.ID, tt.code, got, tt.want)
		}
	}
	if !java.NeedsClass() || c.NeedsClass() {
		t.Errorf("NeedsClass: java %v, cpp %v", java.NeedsClass(), c.NeedsClass())
	}
}

func TestJVMHeap(t *testing.T) {
	for _, c := range []struct{ mem, heap int }{{16, 8}, {48, 8}, {64, 24}, {128, 88}, {256, 204}, {1024, 819}} {
		if got := JVMHeapMB(c.mem); got != c.heap {
			t.Errorf("JVMHeapMB(%d) = %d, want %d", c.mem, got, c.heap)
		}
	}
}

// TestTuning checks the runtime facts of the default table that every
// front end takes from it: a JVM's threads and the compile step's own
// environment.
func TestTuning(t *testing.T) {
	java, _ := Default().Lookup("java")
	c, _ := Default().Lookup("c")
	golang, _ := Default().Lookup("go")
	if got := java.RunLimits(sandbox.Limits{Processes: 10}).Processes; got != 64 {
		t.Errorf("java processes %d, want raised to 64", got)
	}
	if got := java.RunLimits(sandbox.Limits{}).Processes; got != 64 {
		t.Errorf("java processes %d with the default limit, want raised to 64", got)
	}
	if got := java.RunLimits(sandbox.Limits{Processes: 200}).Processes; got != 200 {
		t.Errorf("java processes %d, want the caller's 200", got)
	}
	if got := c.RunLimits(sandbox.Limits{Processes: 10}).Processes; got != 10 {
		t.Errorf("c processes %d, want the caller's 10", got)
	}
	if got := c.RunLimits(sandbox.Limits{}); got != (sandbox.Limits{}) {
		t.Errorf("c limits %+v, want zero fields kept", got)
	}
	if !slices.Equal(golang.CompileEnv, []string{"GOPROXY=off"}) || golang.BuildCacheEnv != "GOCACHE" {
		t.Errorf("go compile env %q, build cache %q", golang.CompileEnv, golang.BuildCacheEnv)
	}
	if c.CompileEnv != nil || c.BuildCacheEnv != "" || c.MinProcesses != 0 {
		t.Errorf("c has tuning: %q %q %d", c.CompileEnv, c.BuildCacheEnv, c.MinProcesses)
	}
}

// TestThreadEnvironment: a Python run tells its numeric libraries the
// run's CPU allowance rounded up (1 for the default half core), within
// half its process limit; a language without thread_env gets nothing.
func TestThreadEnvironment(t *testing.T) {
	py, _ := Default().Lookup("python")
	py3, _ := Default().Lookup("python3")
	want := []string{"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "NUMEXPR_NUM_THREADS"}
	if !slices.Equal(py.ThreadEnv, want) || !slices.Equal(py3.ThreadEnv, want) {
		t.Fatalf("python thread_env %q, python3 %q; want %q", py.ThreadEnv, py3.ThreadEnv, want)
	}
	for _, tc := range []struct {
		limits sandbox.Limits
		n      string
	}{
		{sandbox.Limits{}, "1"},
		{sandbox.Limits{CPUs: 0.25}, "1"},
		{sandbox.Limits{CPUs: 1}, "1"},
		{sandbox.Limits{CPUs: 2}, "2"},
		{sandbox.Limits{CPUs: 2.5}, "3"},
		{sandbox.Limits{CPUs: 1024}, "25"},
		{sandbox.Limits{CPUs: 16, Processes: 6}, "3"},
		{sandbox.Limits{CPUs: 16, Processes: 1}, "1"},
		{sandbox.Limits{CPUs: math.NaN()}, "1"},
		{sandbox.Limits{CPUs: math.Inf(1), Processes: 4096}, "1"},
	} {
		got := py.ThreadEnvironment(tc.limits)
		if len(got) != len(want) {
			t.Fatalf("%+v: %q", tc.limits, got)
		}
		for i, kv := range got {
			if kv != want[i]+"="+tc.n {
				t.Errorf("%+v: %q, want %s=%s", tc.limits, kv, want[i], tc.n)
			}
		}
	}
	c, _ := Default().Lookup("c")
	if got := c.ThreadEnvironment(sandbox.Limits{CPUs: 4}); got != nil {
		t.Errorf("c: %q", got)
	}
}
