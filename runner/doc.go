// Package runner is the one build-and-program layer of coderunner: every
// front end (the judge, execute's single runs, invoke's executions) has it
// compile and run programs of every language of the language table
// (package lang) in a sandbox.Backend. Builder.Build compiles into the
// caller's workspace without a cache; Runner, the judge's engine, adds the
// compile cache described below.
//
// Prepare looks the language up, makes sure its toolchain is there, and,
// for a compiled language, compiles the code in the sandbox: no network,
// the toolchain read-only, a fresh host directory (mode 0700, removed
// after) as the only writable workspace, and the compile limits
// (DefaultCompileLimits: 30 s, 512 MB), never the program's. A compilation
// that fails, times out, runs out of memory or prints too much is a
// *judge.CompileError carrying the compiler's diagnostics; a failure of the
// sandbox is a plain error.
//
// What the compiler left in its workspace (the binary, Java's class files)
// is copied into a compile cache, opening every name beneath the workspace
// with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), taking regular files
// and directories only, within 256 MB: the host never follows a link the
// sandbox planted. An entry is keyed by the SHA-256 of the language, the
// toolchain's version, the compile argv and environment and the source
// (KeyInput), written to a temporary directory and renamed into place, so
// that no one sees half an entry, and never changed after. The cache is
// bounded by Options.CacheMaxBytes with least-recently-used eviction (an
// entry's directory mtime is its last use); a Program holds a shared flock
// on its entry, and eviction skips entries held by any process. A second
// Prepare of the same source does not compile again, and concurrent ones
// compile once.
//
// Program.Run mounts the entry read-only at ProgramDir (/opt/program) and
// runs the recipe's run argv there, with a private /workspace, empty but
// for an interpreted program's source, as working directory. On a backend
// that keeps sandboxes between runs (sandbox.Reuser: native), the runs of
// one Program form a series: each test starts in a clean sandbox that an
// earlier test of the same program may have used, which saves creating
// one per test. The run gets exactly the caller's limits, raised only where
// a runtime needs more processes (a JVM's threads).
//
// What a runtime needs beyond its argv comes from the language table
// (package lang): Java's recipe raises the process limit to 64
// (min_processes) and gives the JVM a heap below the memory limit
// ({heap_mb}), so that a program that fills its heap fails with java.lang.OutOfMemoryError (which the judge reports as
// memory_exceeded) rather than being killed by the cgroup. A language that
// names its build cache variable (Go's build_cache_env: GOCACHE) gets a
// private, writable build cache in the compile workspace, seeded with the
// standard library (goseed.go). The first Go compile of a toolchain builds
// the seed once, in the background (a caller that gives up does not stop
// it), and keeps it in the cache directory as go-seed-<version>-<hash>;
// later compiles start from a copy of it (hard links as root, a real copy
// otherwise). A failed seed build is retried after ten minutes; meanwhile
// compiles start from an empty cache. The README's Performance section
// has what these steps cost.
//
// The cache directory must be reachable by the sandbox's users, since
// entries are bind-mounted from it: as root the default is
// /var/cache/coderunner, never under /root. Seeds of Go toolchains no
// longer installed are not removed.
package runner
