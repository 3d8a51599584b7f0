// Package sandbox defines the contract between coderunner and the engines
// that run untrusted programs.
//
// A Backend runs one program described by a Spec under the Limits it names
// and reports what happened in a Result. The verdict of a run (time limit,
// memory limit, non-zero exit, ...) is a Status inside the Result; an error
// returned by Run means the machinery itself failed and nothing can be said
// about the program.
//
// Implementations live beneath this package (sandbox/native, and later
// sandbox/bwrap and sandbox/docker); every one of them must pass the
// conformance suite in sandbox/sandboxtest.
package sandbox
