// Package execute runs one program: a language, its code, an optional
// standard input and ExecutionLimits go in; a Result comes out, whose JSON
// is what ExecuteWithLimits returns, `coderunner run --json` prints and
// POST /v1/run answers.
//
// An Executor owns no isolation of its own. It validates a Request, makes
// the run's workspace, has runner.Builder build the program there (which
// compiles first in the sandbox when the language is compiled, and gives
// the sandbox.Spec of a run from the language table), runs it in a
// sandbox.Backend and translates the backend's verdict into the status
// vocabulary of the API ("success", "timeout", "execution_error",
// "setup_error"). As everywhere in coderunner, a verdict is not an error:
// Execute returns an error only for a request it refuses (empty code,
// unknown language, invalid limits or session id); everything that happens
// to an accepted request, including a failing sandbox, is in the Result.
package execute
