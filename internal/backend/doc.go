// Package backend is the registry of sandbox backends.
//
// Each backend package (sandbox/native, sandbox/bwrap, sandbox/docker)
// registers a Module from an init function, the way Caddy modules do: its
// name, the typed section of the configuration it reads and its factory.
// The binary chooses which backends it carries by importing them (only
// cmd/coderunner and the coderunner package do). Open builds the backend a
// user asked for, or with "auto" the strongest one that works on this
// machine, handing its factory its own section of the configuration.
package backend
