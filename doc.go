// Package coderunner is the Go API of coderunner, a sandbox for untrusted
// code: single runs with limits and sessions (ExecuteCode,
// ExecuteWithLimits, SandboxProcessIsolation) and a judge of programs
// against test cases (CodeRunner.Execute), with a context first.
//
// The package builds on Linux only, as do the sandbox backends it opens.
//
// # Running code
//
// ExecuteCode runs a program and returns its Result, whose JSON is the
// object /v1/run and the execute_code MCP tool answer (stdout, stderr, exit_code,
// execution_time, status, error_message, resource_usage, limits_applied,
// …). ExecuteWithLimits does the same under explicit ExecutionLimits;
// SandboxProcessIsolation adds a report of the isolation the program ran
// under. The status is one of StatusSuccess, StatusTimeout,
// StatusExecutionError and StatusSetupError:
//
//	res, err := coderunner.ExecuteCode(ctx, "python", "print('Hello, World!')")
//	// res.Stdout == "Hello, World!\n", res.Status == coderunner.StatusSuccess
//
// A verdict is not an error: a program that fails, times out or runs out
// of memory is a Result with its status. The error is non-nil only when
// the request was refused (ErrUnsupportedLanguage, ErrEmptyCode,
// ErrInvalidLimits, ErrInvalidSessionID, ErrInvalidOption,
// ErrInvalidFiles, a session cap), when no sandbox
// works here (ErrBackendUnavailable), or when ctx ended; the Result is
// never nil and then carries status setup_error and the message, so that
// a caller that only looks at the Result sees why.
//
// WithArgs, WithCompilerFlags and WithEnv give the program arguments,
// compiler flags (from the language's allow-list) and environment
// variables:
//
//	res, err := coderunner.ExecuteCode(ctx, "c", src,
//		coderunner.WithCompilerFlags("-O0", "-DX=3"), coderunner.WithArgs("in.txt"))
//
// WithFiles and WithEntry make a program of several files (every source a
// compiled language names is built together); WithArtifactContent returns
// the contents of the files the program leaves. They combine with the
// options above in one call.
//
// The package-level functions use a CodeRunner made on first use with the
// defaults (the strongest backend that works here, the configuration from
// CODERUNNER_* variables). A long-lived program makes its own with New and
// closes it.
//
// # Sessions
//
// WithSession runs a call in a session: files written by one call of the
// session are in /workspace for the next; processes, /tmp and memory are
// fresh each time. Calls of one session run one at a time, sessions never
// see each other, idle sessions expire (30 minutes by default), and their
// number and disk use are capped (see package session).
//
// # Judging
//
// CodeRunner.Execute compiles a program once, runs it on every test case
// and judges it. ArtifactToExecutionRequest and
// ExecutionResultToArtifact convert to and from Fleet artifacts.
//
// # Monitoring
//
// ResourceMonitor computes a run's resource usage (memory at the start
// and at the peak, CPU samples, average and peak CPU percent) from samples
// taken while a program runs. Results carry the same figures, computed
// from the samples the sandbox takes of the whole process tree.
package coderunner
