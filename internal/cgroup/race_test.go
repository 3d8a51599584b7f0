//go:build race

package cgroup

// raceEnabled: the race detector makes buffers passed to syscalls escape,
// so allocation counts mean nothing under it.
const raceEnabled = true
