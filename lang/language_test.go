package lang

import (
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
