package runner

import (
	"fmt"
	"slices"

	"github.com/coderunner/coderunner/sandbox"
)

// tuning is what the runner adds to a language's recipe for the runtimes
// that need it. The recipes (package lang) cannot express these yet: they
// depend on the run's limits or on the runner's cache, so they live here,
// keyed by language id.
type tuning struct {
	// minProcesses raises the process (thread) limit of a run: a JVM
	// starts about twenty threads before main runs.
	minProcesses int
	// jvm adds heap and footprint flags after argv[0] of the run.
	jvm bool
	// goCache gives the compile step a private, writable GOCACHE in its
	// workspace, seeded with the standard library (see goseed.go).
	goCache bool
	// compileEnv is added to the recipe's environment of the compile step.
	compileEnv []string
}

var tunings = map[string]tuning{
	"java": {minProcesses: 64, jvm: true},
	// GOPROXY=off: a module import fails at once instead of waiting for a
	// network that is not there.
	"go": {goCache: true, compileEnv: []string{"GOPROXY=off", "GOCACHE=" + sandbox.WorkspaceDir + "/" + goCacheDir}},
}

// JVM sizing. The heap is what is left of the limit once the JVM's own
// memory (metaspace, code cache, thread stacks, the class data archive) is
// set aside, so that a program that fills its heap gets a Java
// OutOfMemoryError, which the judge reports as memory_exceeded, rather
// than a kill by the cgroup that says nothing.
const (
	// jvmReserveMB is the JVM's own memory outside the heap with the
	// serial collector and the C1 compiler only.
	jvmReserveMB = 40
	// jvmMinHeapMB is the smallest heap given, whatever the limit.
	jvmMinHeapMB = 8
)

// jvmHeapMB is the -Xmx for a run limited to memMB.
func jvmHeapMB(memMB int) int {
	return max(jvmMinHeapMB, min(memMB*4/5, memMB-jvmReserveMB))
}

// jvmFlags are the flags added after argv[0] of a JVM run: a heap below
// the limit, and a small JVM (one collector thread, the quick compiler
// only, the class data archive, no perf data file in /tmp).
func jvmFlags(memMB int) []string {
	return []string{
		fmt.Sprintf("-Xmx%dm", jvmHeapMB(memMB)),
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-Xshare:auto",
		"-XX:-UsePerfData",
	}
}

// tuneArgs applies t to a run's argv.
func (t tuning) tuneArgs(args []string, memMB int) []string {
	if !t.jvm || len(args) == 0 {
		return args
	}
	return slices.Concat(args[:1], jvmFlags(memMB), args[1:])
}
