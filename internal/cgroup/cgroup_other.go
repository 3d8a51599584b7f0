//go:build !linux

package cgroup

import (
	"fmt"
	"time"
)

// Manager creates run groups; cgroups exist only on Linux.
type Manager struct{}

// Group is the cgroup of one run; cgroups exist only on Linux.
type Group struct{}

// Detect reports that cgroups exist only on Linux.
func Detect(Options) (*Manager, error) {
	return nil, fmt.Errorf("%w: cgroups exist only on Linux", ErrUnavailable)
}

// Version is never called: Detect returns no Manager here.
func (m *Manager) Version() Version { return 0 }

// Describe is never called: Detect returns no Manager here.
func (m *Manager) Describe() string { return "no cgroups (not Linux)" }

// Create is never called: Detect returns no Manager here.
func (m *Manager) Create(string, Limits) (*Group, error) { return nil, ErrUnavailable }

// Name returns "".
func (g *Group) Name() string { return "" }

// FD returns false.
func (g *Group) FD() (int, bool) { return -1, false }

// Add fails.
func (g *Group) Add(int) error { return ErrUnavailable }

// Stats fails.
func (g *Group) Stats() (Stats, error) { return Stats{}, ErrUnavailable }

// Kill does nothing.
func (g *Group) Kill() error { return nil }

// Destroy does nothing.
func (g *Group) Destroy() error { return nil }

// Update applies limits to a group; see the Linux implementation.
func (g *Group) Update(Limits) error { return ErrUnavailable }

// ResetPeak fails: there are no cgroups here.
func (g *Group) ResetPeak() error { return ErrUnavailable }

// RemoveStale is never called: Detect returns no Manager here.
func (m *Manager) RemoveStale(time.Duration, func(string) bool) int { return 0 }
