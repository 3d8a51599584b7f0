// Package lang is the language table: how to name, compile and run a
// program in each supported language inside a sandbox.
//
// The table is data. Its defaults are embedded from recipes.yaml; the
// configuration file's languages section overrides any field of a default
// recipe or adds a new language, with no Go code. A Recipe holds the
// source file name, the compile and run argv templates, extra read-only
// mounts, environment, and hints for finding the toolchain on the host.
//
// Toolchains are discovered on the host lazily, at most once per language
// and process, under a timeout. Discovery insists on real binaries (an ELF
// file, after resolving symbolic links), so that a pyenv or asdf shell shim
// is never mistaken for an interpreter, and asks a rustup proxy for the real
// toolchain's sysroot. A toolchain that lives outside the base mounts (/usr,
// /bin, /lib, /lib64, /sbin) is mounted read-only at a neutral path such as
// /opt/jdk or /opt/rust: nothing under the host's /root or /home is ever
// visible inside the sandbox at its own path.
//
// Argv templates use these placeholders, each replaced wherever it occurs
// inside an argument:
//
//	{source}     absolute path of the source file (the entry) inside the sandbox
//	{sources}    compile templates only, as a whole argument: every source file
//	             compiled together (the entry, then the files the recipe's
//	             sources patterns match); the entry alone without patterns
//	{compiler_flags}
//	             compile templates only, as a whole argument past the first:
//	             a request's compiler flags (see Language.CheckCompilerFlags);
//	             without it they are appended to the compile argv
//	{binary}     absolute path of the compiled program inside the sandbox
//	{class}      the Java class name (see Language.SourceName)
//	{workspace}  the workspace directory, /workspace
//	{memory_mb}  the memory limit of the step in MB (256 when unknown)
//	{heap_mb}    a JVM heap below that limit (see JVMHeapMB)
//	{tool}       sandbox path of the discovered toolchain program
//	{root}       sandbox path of the toolchain root (its mount target)
//
// A program of several files (Place) compiles with project_compile instead
// of compile when the workspace holds the recipe's project_file (Go's
// go.mod).
//
// Version commands run on the host and use {host_tool} and {host_root}
// instead; a root command may also use {host_program}, the program found
// on the host before any proxy was resolved.
package lang
