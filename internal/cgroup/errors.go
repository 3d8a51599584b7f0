package cgroup

import "errors"

var (
	// ErrUnavailable means no usable cgroup was found: none is mounted, our
	// own cgroup is missing, or its controllers are not delegated to us.
	// Detect wraps it with the reason.
	ErrUnavailable = errors.New("cgroups unavailable")
	// ErrInvalidName means a group name is not a single safe path element.
	ErrInvalidName = errors.New("invalid cgroup name")
	// ErrDestroyed means the Group was already destroyed.
	ErrDestroyed = errors.New("cgroup destroyed")
)
