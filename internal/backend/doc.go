// Package backend is the registry of sandbox backends.
//
// Each backend package (sandbox/native, sandbox/bwrap, sandbox/docker)
// registers a Factory under its name from an init function, the way
// database/sql drivers do, so that the binary chooses which backends it
// carries by importing them. Open builds the backend a user asked for, or
// with "auto" the strongest one that works on this machine.
package backend
