package judge

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/coderunner/coderunner/sandbox"
)

// Per-test error messages. The first three are the documented ones.
const (
	msgTimedOut       = "Test execution timed out"
	msgMemoryExceeded = "Memory limit exceeded"
	msgTotalTimeout   = "Total timeout exceeded"
	msgOutputLimit    = "output limit exceeded"
)

// javaOOM is what a JVM prints when its heap runs out. The JVM then exits
// with an ordinary error, so without this the cgroup never sees an OOM kill.
var javaOOM = []byte("java.lang.OutOfMemoryError")

// verdict turns one run into a test result: res (which keeps only the start
// of each stream) and out (the whole output, judged as it streamed). The
// result keeps what kept allows of the kept stdout and, for a runtime
// error, stderr; Truncated says when that is not all the program wrote.
// Hidden tests charge nothing: redact empties them. When several outcomes apply the
// first of these wins: output limit (the program was stopped, its output is
// incomplete), time limit (checked before the others), memory (a
// cgroup OOM kill of any process of the run, or a JVM OutOfMemoryError in a
// failed run), runtime error, and finally the comparison of a clean exit. An
// OOM kill wins over a clean exit because the program did exceed its limit
// even if its main process survived.
func verdict(tc TestCase, language string, res *sandbox.Result, out *output, kept *budget) (TestResult, error) {
	if tc.IsHidden {
		kept = &budget{left: 1 << 62}
	}
	stdout := string(res.Stdout)
	tr := TestResult{
		TestID:          tc.ID,
		ExpectedOutput:  tc.ExpectedOutput,
		ExecutionTimeMS: res.WallTime.Milliseconds(),
		MemoryUsedKB:    res.PeakMemory / 1024,
		Truncated:       res.StdoutTruncated || out.stdout.written() > int64(len(stdout)),
	}
	if tr.Truncated {
		stdout = dropSplitRune(stdout)
	}
	var cut bool
	tr.ActualOutput, cut = kept.take(stdout)
	tr.Truncated = tr.Truncated || cut
	failed := res.Status == sandbox.StatusNonzeroExit || res.Status == sandbox.StatusSignaled
	switch {
	case res.Status == sandbox.StatusOutputLimit:
		tr.Status, tr.ErrorMessage = TestWrongAnswer, strp(msgOutputLimit)
	case res.Status == sandbox.StatusTimeLimit:
		tr.Status, tr.ErrorMessage = TestTimeout, strp(msgTimedOut)
	case res.Status == sandbox.StatusMemoryLimit || res.MemoryExceeded,
		failed && strings.EqualFold(language, "java") && out.stderr.contains():
		tr.Status, tr.ErrorMessage = TestMemoryExceeded, strp(msgMemoryExceeded)
	case failed:
		tr.Status = TestRuntimeError
		msg := strings.TrimSpace(string(res.Stderr))
		if out.stderr.written() > int64(len(res.Stderr)) || res.StderrTruncated {
			// Only the start of stderr was kept: its end is not the end.
			msg = dropSplitRune(strings.TrimLeftFunc(string(res.Stderr), unicode.IsSpace))
			tr.Truncated = true
		}
		msg, cut = kept.take(msg)
		tr.Truncated = tr.Truncated || cut
		if strings.TrimSpace(msg) == "" {
			msg = exitMessage(res)
		}
		tr.ErrorMessage = strp(msg)
	case res.Status == sandbox.StatusOK:
		if out.stdout.match.Match() {
			tr.Status = TestPassed
		} else {
			tr.Status = TestWrongAnswer
		}
	default:
		return TestResult{}, fmt.Errorf("sandbox returned unknown status %q", res.Status)
	}
	return tr, nil
}

// exitMessage says how a failed run ended without quoting its output, so
// that it is safe to show for hidden tests.
func exitMessage(res *sandbox.Result) string {
	if res.Status == sandbox.StatusSignaled && res.Signal != 0 {
		return fmt.Sprintf("Killed by signal %d (%v)", int(res.Signal), res.Signal)
	}
	return fmt.Sprintf("Exit code: %d", res.ExitCode)
}

// totalTimeoutResult is the verdict on a test that had not finished when
// total_timeout_ms ran out.
func totalTimeoutResult(tc TestCase) TestResult {
	return TestResult{
		TestID:         tc.ID,
		Status:         TestTimeout,
		ExpectedOutput: tc.ExpectedOutput,
		ErrorMessage:   strp(msgTotalTimeout),
	}
}

// redact hides what a hidden test could leak: its expected output, the
// program's stdout, and a runtime error message taken from stderr (a
// program could print its input there). The verdict, time and memory stay.
func redact(tr TestResult, res *sandbox.Result) TestResult {
	tr.ActualOutput = ""
	tr.ExpectedOutput = ""
	tr.Truncated = false
	tr.CheckerMessage = nil
	if tr.Status == TestRuntimeError && res != nil {
		tr.ErrorMessage = strp(exitMessage(res))
	}
	return tr
}
