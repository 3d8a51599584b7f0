// Package cli is the command line of coderunner: one App with a
// subcommand per file (run, doctor, langs, version), each with its own
// flag.FlagSet. cmd/coderunner only wires it to the process.
//
// Exit statuses follow docker run and timeout(1): `run` exits with the
// program's own exit code, 124 when it timed out, 137 when it was killed
// for its memory, 125 when the sandbox itself failed, and 2 for bad usage.
package cli
