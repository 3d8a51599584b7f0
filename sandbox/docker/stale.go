package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// Containers outlive the calls that should have removed them when the
// engine stops answering (killed, restarting) in the middle of a run: the
// run fails with a setup error, and its container, which the engine
// still knows once it is back, is left. Two things remove them:
//
//   - a container the backend failed to remove is kept in its orphans and
//     removed again at each tick of the janitor until the engine answers,
//     so a long-lived process (serve) does not hold it until it exits;
//   - a new backend removes, in the background, the containers of
//     coderunner processes of this machine that are gone (RemoveStale):
//     a CLI run that ended while the engine was down leaves its
//     containers to the next one.
//
// A container's owner label names the process that made it: the boot of
// the machine, the PID namespace, the pid and the process's start time.
// Only a container of this boot and PID namespace whose process is gone,
// or is another process under the same pid, is stale: containers of
// other machines sharing the engine, and of older versions without the
// label, are never touched.
const labelOwner = "coderunner.owner"

// Bounds on the cleanups of the engine's containers.
const (
	staleTimeout  = 30 * time.Second
	orphanTimeout = 10 * time.Second
)

// processOwner is the owner label of process pid, or "" when it cannot be
// read (the process is gone, /proc is not there).
func processOwner(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	start := startTime(pid)
	if start == "" {
		return ""
	}
	return fmt.Sprintf("%s/%s/%d/%s", strings.TrimSpace(string(boot)), ns, pid, start)
}

// startTime is field 22 of /proc/pid/stat, the process's start time in
// clock ticks since boot; "" when the process is gone.
func startTime(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat[i+1:]))
	// Fields after the name start at field 3 (state).
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// staleOwner reports whether owner (a container's owner label) names a
// process of this boot and PID namespace (the prefix of self, this
// process's owner label) that no longer runs.
func staleOwner(owner, self string) bool {
	parts := strings.Split(owner, "/")
	mine := strings.Split(self, "/")
	if len(parts) != 4 || len(mine) != 4 || parts[0] != mine[0] || parts[1] != mine[1] {
		return false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 || parts[3] == "" {
		return false
	}
	return startTime(pid) != parts[3]
}

// RemoveStale removes containers a coderunner process of this machine
// left behind when it ended before it could (killed, or the engine down
// when it exited): those whose owner process is gone. A new backend calls
// it in the background.
func (b *Backend) RemoveStale(ctx context.Context) error {
	return b.removeStale(ctx, b.cli)
}

func (b *Backend) removeStale(ctx context.Context, cli *client.Client) error {
	if b.owner == "" {
		return nil
	}
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", labelBackend+"=docker"), filters.Arg("label", labelOwner))})
	if err != nil {
		return err
	}
	var errs []error
	n := 0
	for _, c := range list {
		if !staleOwner(c.Labels[labelOwner], b.owner) {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !isGone(err) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n > 0 {
		b.log.Info("removed containers of coderunner processes that are gone", "containers", n)
	}
	return errors.Join(errs...)
}

// removeStaleAtStart runs RemoveStale once, until Close, on a client of
// its own: the client's first call negotiates the API version, which is
// not safe to do from two goroutines at once.
func (b *Backend) removeStaleAtStart(ctx context.Context, opts []client.Opt) {
	defer b.removing.Done()
	ctx, cancel := context.WithTimeout(ctx, staleTimeout)
	defer cancel()
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return
	}
	defer cli.Close()
	if err := b.removeStale(ctx, cli); err != nil && ctx.Err() == nil {
		b.log.Debug("unable to look for stale containers", "error", err)
	}
}

// orphan records a container the backend failed to remove; the janitor
// removes it once the engine answers again.
func (b *Backend) orphan(id string) {
	b.mu.Lock()
	b.orphans[id] = true
	b.mu.Unlock()
}

// removeOrphans tries again to remove the containers the backend failed
// to remove. It stops when the engine does not answer: it is still away.
func (b *Backend) removeOrphans() {
	b.mu.Lock()
	ids := slices.Sorted(maps.Keys(b.orphans))
	b.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), orphanTimeout)
	defer cancel()
	for _, id := range ids {
		if err := b.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !isGone(err) {
			if client.IsErrConnectionFailed(err) || ctx.Err() != nil {
				return
			}
			b.log.Debug("unable to remove container", "container", id, "error", err)
			continue
		}
		b.mu.Lock()
		delete(b.orphans, id)
		b.mu.Unlock()
		b.log.Info("removed a container left while the engine did not answer", "container", id)
	}
}
