// Package invoke runs the executions of the /execute service: a
// request carries an execution id, code in Python, JavaScript or shell, a
// timeout, standard input and an event; the result carries the status
// (success, failed, timeout, error, crashed), the output, the exit code,
// the metrics, the handler's return value and the files the code left in
// its workspace.
//
// Python and JavaScript code defines handler(event), AWS Lambda style. A
// small wrapper, the invoker's own file, loads the code, calls the handler
// with the event and prints its JSON return value between the lines
// "===SANDBOX_RESULT=== <nonce>" and "===SANDBOX_RESULT_END=== <nonce>"
// at the end of stdout. The host takes the value from there and removes
// the block from stdout.
//
// The nonce is 128 random bits drawn by the host for each run. It reaches
// the wrapper at the head of the program's standard input and is read
// before any user code runs, so it is never in the environment, the
// argument vector or a file of the sandbox, and nothing the code prints
// (an echoed event, a library's output, a copy of the markers) can pass
// for the return value. Code that digs the nonce out of the interpreter's
// own memory could forge a block, but such code could as well return the
// value it wants: the nonce protects the result from output the handler
// did not mean as one, not from the handler itself.
//
// Shell code, and any code sent with "mode": "script", runs as a plain
// program without a wrapper and without a return value.
//
// Every run gets a fresh, size-capped /workspace. On a backend that hands
// a run's private workspace back (sandbox.WorkspaceInspector: native), an
// interpreted program runs in the sandbox's own and its files are listed
// as artifacts through the descriptor the backend passes
// (execute.CollectArtifactsIn). Otherwise the run gets a host directory,
// made a tmpfs where the process may mount (as root) and removed after
// the run, its files listed first through execute.CollectArtifactsWith;
// neither follows a path the sandbox could have planted. Without the
// right to mount, the run gets the sandbox's private workspace and lists
// no artifacts, and a warning says so once.
package invoke
