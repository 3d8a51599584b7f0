// Package interp runs the cells of interpreter sessions ("mode":
// "interpreter"): a live Python or JavaScript interpreter per session,
// started once in the session's sandbox and workspace, which keeps its
// variables, imports and definitions from one call to the next.
//
// The interpreter is one sandboxed run (execute.Executor.RunProcess) of a
// driver kept in this package (driver.py, driver.js) whose standard input
// and output the Manager keeps. A call sends the driver one line: the
// cell and a nonce new for the call. The driver runs the cell with a
// notebook's semantics (the value of its last expression is the result),
// then, after the cell's output, answers with a line tagged with the
// nonce; the Manager takes each stream's bytes up to that mark as the
// call's output, so that output cannot pass for an answer. A cell over
// its time limit is sent an interrupt; one that does not stop within the
// grace period ends its interpreter, and the next call starts another and
// says so (execute.Result.Restarted). The interpreter is attached to its
// session (session.Lease.Attach) and ends with it.
package interp
