// Package judge is coderunner's judge: it compiles a program once, runs it
// on every test case and gives a verdict per test and overall (the
// ExecutionRequest and ExecutionResult of `coderunner judge`, /v1/judge and
// the judge_code MCP tool).
//
// The judge does not know how programs are compiled or isolated: it asks an
// Engine to Prepare the code (compile it, through a cache, when the
// language is compiled) and then runs the resulting Program once per test
// with sandbox.Limits built from the request. The Engine on the real
// sandbox backends and the language table lives elsewhere; tests use a
// scripted fake.
//
// # Requests
//
// DecodeRequest reads the JSON form of an ExecutionRequest. It reads at
// most MaxRequestBytes, refuses a field the request does not have (at
// any depth, named by its path; metadata alone is free-form), and accepts "expected" for
// a test's "expected_output". A zero limit means its default (5000 ms per
// test, 60000 ms in total, 256 MB, 1 CPU, "normalized" comparison), as a
// zero field of sandbox.Limits does; an empty test id becomes
// "test_<index>".
//
// Execute validates the request (empty code, no test cases, memory and
// timeout bounds, with messages such as "Invalid timeout: 50ms"), then checks the project's own bounds
// (per-test timeouts, total timeout, CPU limit, code size, number of tests,
// size of inputs and expected outputs, compare mode). A refused request is a
// sandbox_error result with error_info {code: VALIDATION_ERROR, stage:
// validation} and no test results. A language the Engine does not know is
// an UNSUPPORTED_LANGUAGE result.
//
// # Running
//
// Code is sanitised: NUL bytes are removed, and Python code matching a few
// dangerous-looking patterns (os.system, subprocess, eval, ...) is logged as
// a warning, never refused — the sandbox is the defence.
//
// Tests run up to Options.Parallel at a time (default: the number of
// CPUs), in request order, and their results keep that order whatever
// order the runs finish in. Each run gets WallTime and CPUTime equal to the
// test's timeout_ms, or the request's when the test has none (larger or
// smaller), Memory from memory_limit_mb, CPUs from cpu_limit, and
// OutputBytes of max(Options.MaxOutputKB KiB, twice the largest expected
// output) but at most Options.MaxOutputCeilingKB KiB (a longer expected
// output is refused); other limits are left to the backend's defaults.
//
// Outputs are judged as they stream: a run's stdout goes through a
// Matcher of the request's mode as the program writes it (a
// StreamingProgram; other Programs' Results are fed to it after the run),
// and stderr is only counted and searched for a JVM's OutOfMemoryError.
// A test result keeps at most Options.KeptOutputKB of stdout
// (actual_output) and of a runtime error's stderr (error_message), and a
// request's results at most Options.KeptOutputTotalKB in all, charged as
// tests finish; a result showing less than the program wrote says
// truncated.
//
// total_timeout_ms is wall-clock time counted from the judge's start, so
// compilation counts against it; compilation itself is
// never cut short, the Engine bounds it with its own compile limits. When
// it runs out, running tests are cancelled, tests not yet started are not
// started, and all of them are "timeout" with "Total timeout exceeded"; a
// run that had ended on its own keeps its verdict.
//
// # Verdicts
//
// A run's sandbox.Result becomes a test verdict, first match wins:
// output over the cap is wrong_answer ("output limit exceeded"); a time
// limit is timeout; a memory-limit kill, an OOM kill of any process of the
// run, or a failed Java run that printed java.lang.OutOfMemoryError is
// memory_exceeded; a non-zero exit or a signal is runtime_error with the
// trimmed stderr as message (or "Exit code: N" / "Killed by signal N");
// a clean exit is passed or wrong_answer by the request's Comparator (see
// ParseCompare). execution_time_ms is the run's wall time and
// memory_used_kb its peak memory.
//
// The overall status, summary and error_info follow from the tests:
// judge_error when the checker or the interactor failed on any test,
// else all_passed, some_passed (a test passed, or earned points), else
// the first of timeout, memory_exceeded, runtime_error found among the
// tests, else all_failed.
//
// # Checkers and interactors
//
// A request's Checker judges each test whose run ended cleanly, instead
// of the Comparator: it runs as `checker INPUT OUTPUT ANSWER` through
// Invoker.Invoke, with the run's whole stdout (held up to the output
// cap) as OUTPUT, and its exit code, testlib's, is the verdict: passed,
// wrong_answer, presentation_error, partial (Points from 0 to 1 on its
// stdout, feeding the subtasks) or, for a failure of the checker itself,
// judge_error. A request's Interactor runs beside the solution on each
// test, each one's stdout piped to the other's stdin (interact.go); its
// exit code decides the same way, after the solution's time and memory
// limits. Both are prepared by the Engine like the solution, with a
// context PreparingTool recognises, and have their own limits
// (Options.ToolLimits). Their messages are the tests' CheckerMessage.
//
// Hidden tests are judged like the others, but their actual_output and
// expected_output are empty strings, error_info.details is an empty string
// when they are the first failure, and a runtime error's message does not
// quote stderr (a program could print its input there): it says only how
// the program ended.
//
// # Subtasks
//
// A request's Subtasks group its tests for scoring (subtask.go): each
// earns its points by its policy (all, min or sum of its tests' scores)
// and the result adds Score, MaxScore and SubtaskResults. A subtask that
// stops at its first failure has its tests that have not started skipped
// (TestSkipped) once one of them fails, unless another subtask needs them.
//
// # Failures
//
// Execute never returns an error and never panics. A failure of the
// machinery (an Engine error other than a compile error or an unknown
// language, a panic, the caller's cancellation) is a sandbox_error result
// with error_info {code: SANDBOX_ERROR, stage: compilation or execution}
// and no test results, and is logged with the request id.
//
// # Fleet
//
// ArtifactToExecutionRequest and ExecutionResultToArtifact convert between
// Fleet artifacts (the control plane's unit of exchange) and
// requests/results, storing result content of InlineThreshold bytes or more by "beads:"
// reference.
package judge
