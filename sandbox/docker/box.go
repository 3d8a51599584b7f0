package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
	"github.com/coderunner/coderunner/sandbox/internal/kquota"
)

// box is one container. It runs one program at a time; with
// Options.Reuse, between runs of the same program it is cleaned (every
// process of the program's user killed, /workspace, /tmp, /dev/shm and
// /dev/mqueue emptied, SysV IPC removed, the files put back) and kept for
// the next run.
type box struct {
	id    string
	key   string
	image string
	// res are the limits the container has now; a run with others
	// updates them.
	res resources
	// runs counts the programs run in the container.
	runs      int
	idleSince time.Time
	// files are the private workspace's files, kept as an archive in
	// filesDir and unpacked before each run.
	files []sandbox.File
	// cg reads the container's cgroup on this machine; nil on a remote
	// engine, where the engine's stats are used.
	cg *hostCgroup
	// uid and gid are the user its programs run as; pooled is set while
	// uid is counted in the backend's pool (freeUser).
	uid, gid int
	pooled   bool
	// warm is set for a container of the warm pool: it serves one run.
	// mountDir is its directory in the pool, bound at /workspace with
	// slave propagation; mounted is set while the run's workspace is
	// mounted on it.
	warm     bool
	mountDir string
	mounted  bool
	// launch is the launcher of a warm container that starts its
	// program without docker exec (launch.go); nil otherwise.
	launch *launcher
}

// resources are the limits the engine can change on a running container.
type resources struct {
	memory int64
	cpus   float64
	pids   int
}

// cpuPeriod is the CFS period in microseconds.
const cpuPeriod = 100000

// filesDir holds the archive of a private workspace's files inside the
// container, owned by the keeper.
const filesDir = "/.coderunner-files"

// prelude runs before the program, in the process that then becomes the
// program (exec), as the program's user. It kills whatever of the user is
// left (the backend already did, from the host, when it can), empties the
// scratch directories and /dev/mqueue (the user's POSIX message queues)
// after an earlier run ($1 = wipe), removes the user's SysV IPC objects and unpacks the workspace's files ($2 = files). Any
// failure exits with preludeStatus and a line starting with preludeTag,
// and the run is retried in a new container.
const prelude = `i=0
while :; do
	kill -9 -1 2>/dev/null
	left=
	for p in /proc/[0-9]*; do
		[ "$p" = "/proc/$$" ] && continue
		[ -O "$p" ] && left=$p && break
	done
	[ -z "$left" ] && break
	i=$((i+1)); [ "$i" -lt 10000 ] || { echo "coderunner-prelude: $left survives" >&2; exit 120; }
done
if [ "$1" = wipe ]; then
	rm -rf /workspace/* /workspace/.[!.]* /workspace/..?* /tmp/* /tmp/.[!.]* /tmp/..?* /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?* /dev/mqueue/* /dev/mqueue/.[!.]* /dev/mqueue/..?* </dev/null 2>/dev/null
	for f in /workspace/* /workspace/.[!.]* /workspace/..?* /tmp/* /tmp/.[!.]* /tmp/..?* /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?* /dev/mqueue/* /dev/mqueue/.[!.]* /dev/mqueue/..?*; do
		if [ -e "$f" ] || [ -L "$f" ]; then echo "coderunner-prelude: $f survives" >&2; exit 120; fi
	done
	if command -v ipcrm >/dev/null 2>&1; then ipcrm -a </dev/null >/dev/null 2>&1; fi
fi
if [ "$2" = files ]; then
	(umask 0 && tar -x -f /.coderunner-files/files.tar -C /workspace </dev/null) || { echo "coderunner-prelude: files not unpacked" >&2; exit 120; }
fi
shift 2
exec "$@"`

// preludeStatus and preludeTag mark a failed prelude.
const (
	preludeStatus = 120
	preludeTag    = "coderunner-prelude: "
)

// maxInodes caps the files of each tmpfs, as on the native backend.
const maxInodes = 16384

// extraPids are the container's own processes beside the program:
// docker-init, the keeper, and the cleanup between runs.
const extraPids = 3

func (r resources) engine() container.Resources {
	pids := int64(r.pids + extraPids)
	quota := int64(r.cpus*cpuPeriod + 0.5)
	return container.Resources{
		Memory: r.memory,
		// Equal to the memory limit: no swap.
		MemorySwap: r.memory,
		CPUPeriod:  cpuPeriod,
		CPUQuota:   max(quota, 1000),
		PidsLimit:  &pids,
	}
}

func resourcesOf(l sandbox.Limits) resources {
	return resources{memory: l.Memory, cpus: l.CPUs, pids: l.Processes}
}

// specKey identifies the program a spec runs and the container settings
// that cannot change once it exists: only runs with the same key share a
// container. Stdin and the limits the engine can update are left out.
func specKey(s *sandbox.Spec, image string) string {
	type file struct {
		Path string
		Mode uint32
		Sum  string
	}
	files := make([]file, len(s.Files))
	for i, f := range s.Files {
		sum := sha256.Sum256(f.Content)
		files[i] = file{f.Path, uint32(f.Mode), hex.EncodeToString(sum[:])}
	}
	lim := s.Limits
	b, _ := json.Marshal([]any{image, s.Args, s.Env, s.Dir, s.Mounts, s.Workspace, files,
		lim.FileSize, lim.OpenFiles, lim.TmpSize, lim.WorkspaceSize, stackLimit(lim)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func stackLimit(l sandbox.Limits) int64 { return min(l.Memory, 256*sandbox.MiB) }

// ulimits are the rlimits of a container's processes: those of the
// native backend.
func ulimits(lim sandbox.Limits) []*units.Ulimit {
	return []*units.Ulimit{
		{Name: "core", Soft: 0, Hard: 0},
		{Name: "fsize", Soft: lim.FileSize, Hard: lim.FileSize},
		{Name: "nofile", Soft: int64(lim.OpenFiles), Hard: int64(lim.OpenFiles)},
		{Name: "stack", Soft: stackLimit(lim), Hard: stackLimit(lim)},
		// Per-user counts, shared by every container's user: see kquota.
		{Name: "sigpending", Soft: kquota.SigPending, Hard: kquota.SigPending},
		{Name: "msgqueue", Soft: kquota.MsgQueueBytes, Hard: kquota.MsgQueueBytes},
	}
}

// keeperConfig is the configuration of a container of image: its keeper
// process, environment and labels.
func (b *Backend) keeperConfig(image string) *container.Config {
	return &container.Config{
		Image: image,
		// The keeper holds the container open between runs, as a user
		// the program cannot signal.
		Cmd:             []string{"sleep", "2147483647"},
		User:            b.keeper,
		WorkingDir:      "/",
		Env:             []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		NetworkDisabled: true,
		Labels: map[string]string{
			labelBackend:  "docker",
			labelInstance: b.instance,
			labelPID:      strconv.Itoa(os.Getpid()),
			labelOwner:    b.owner,
		},
	}
}

// create makes and starts a container for s, with the security settings:
// no network, read-only root, no-new-privileges,
// every capability dropped, pids, memory equal to memory+swap, CPU quota,
// a non-root user; plus the project's seccomp profile and size-capped
// tmpfs for /workspace, /tmp and /dev/shm.
func (b *Backend) create(ctx context.Context, s *sandbox.Spec, image, key string) (_ *box, retErr error) {
	lim := s.Limits
	bx := &box{key: key, image: image, res: resourcesOf(lim), files: s.Files}
	b.takeUser(bx, s.Workspace)
	defer func() {
		if retErr != nil && bx.id == "" {
			b.freeUser(bx)
		}
	}()
	tmpfs := map[string]string{
		sandbox.TmpDir: fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,nr_inodes=%d,mode=1777", lim.TmpSize, maxInodes),
		// The engine mounts sysfs at /sys; nothing of it is needed.
		"/sys": "ro,nosuid,nodev,noexec,size=4k",
	}
	var mounts []mount.Mount
	if s.Workspace != "" {
		if err := hostws.Prepare(s.Workspace, s.Files, bx.uid, os.Geteuid() == 0); err != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		bx.files = nil
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: s.Workspace, Target: sandbox.WorkspaceDir})
	} else {
		tmpfs[sandbox.WorkspaceDir] = fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,nr_inodes=%d,mode=0755,uid=%d,gid=%d",
			lim.WorkspaceSize, maxInodes, bx.uid, bx.gid)
	}
	var archive []byte
	if len(bx.files) > 0 {
		var err error
		if archive, err = tarFiles(bx.files); err != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		// The keeper's: the program reads the archive, never changes it.
		tmpfs[filesDir] = fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,nr_inodes=16,mode=0755,uid=%s,gid=%s",
			len(archive)+64<<10, strings.Split(b.keeper, ":")[0], strings.Split(b.keeper, ":")[1])
	}
	for _, m := range s.Mounts {
		t := m.TargetPath()
		if b.images.provides(t) {
			// The image has its own system files and toolchain.
			continue
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: t, ReadOnly: !m.Writable})
	}
	if err := b.launch(ctx, bx, image, lim, tmpfs, mounts, nil, false); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			b.discard(bx)
		}
	}()
	if archive != nil {
		var out bytes.Buffer
		code, err := b.execWait(ctx, bx, b.keeper, []string{"/bin/sh", "-c", "umask 222 && exec cat >" + filesDir + "/files.tar"}, bytes.NewReader(archive), &out)
		if err != nil {
			return nil, err
		}
		if code != 0 {
			return nil, fmt.Errorf("%w: unable to put the files into the container (status %d): %.500s", sandbox.ErrSetup, code, out.String())
		}
	}
	return bx, nil
}

// launch creates and starts bx's container of image with the security
// settings, the limits lim, the tmpfs, the bind mounts and labels beside
// the backend's; on an error nothing of it is left (a container created
// is discarded). With withLauncher its command is the launcher, run as
// bx's user, attached before the start and ready once launch returns.
func (b *Backend) launch(ctx context.Context, bx *box, image string, lim sandbox.Limits, tmpfs map[string]string, mounts []mount.Mount, labels map[string]string, withLauncher bool) error {
	init := true
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + b.profile},
		CapDrop:        []string{"ALL"},
		Init:           &init,
		IpcMode:        container.IPCModePrivate,
		Tmpfs:          tmpfs,
		ShmSize:        lim.TmpSize,
		Mounts:         mounts,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources:      bx.res.engine(),
	}
	hc.Ulimits = ulimits(lim)
	cfg := b.keeperConfig(image)
	maps.Copy(cfg.Labels, labels)
	if withLauncher {
		launcherConfig(cfg, bx.user())
	}
	// The engine may go on creating a container after the request for it
	// was cancelled, and its id would then be known to nobody: the
	// container would stay behind, created and never removed. So the
	// create is not cancelled with ctx (only bounded in time); the start
	// below is, and a container whose start fails is discarded.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	created, err := b.cli.ContainerCreate(cctx, cfg, hc, nil, nil, "")
	cancel()
	if err != nil {
		return fmt.Errorf("%w: unable to create a container of image %s: %w", sandbox.ErrSetup, image, err)
	}
	bx.id = created.ID
	if withLauncher {
		if err := b.attach(ctx, bx); err != nil {
			b.discard(bx)
			return err
		}
	}
	if err := b.cli.ContainerStart(ctx, bx.id, container.StartOptions{}); err != nil {
		b.discard(bx)
		return fmt.Errorf("%w: unable to start a container of image %s: %w", sandbox.ErrSetup, image, err)
	}
	initPid := 0
	if ins, err := b.cli.ContainerInspect(ctx, bx.id); err == nil && ins.ContainerJSONBase != nil && ins.State != nil && ins.State.Pid > 0 {
		initPid = ins.State.Pid
		if bx.cg, err = openHostCgroup(initPid); err != nil {
			b.log.Debug("container cgroup not readable here; using the engine's stats", "container", bx.id, "error", err)
		}
	}
	if withLauncher {
		if err := b.readyLauncher(ctx, bx, initPid); err != nil {
			if _, serr := b.cli.ContainerStatPath(context.WithoutCancel(ctx), bx.id, "/bin/sh"); serr != nil && cerrdefs.IsNotFound(serr) {
				// Checked once: the image's runs get containers of
				// their own.
				b.noShell.Store(image, true)
				err = fmt.Errorf("%w: image %s has no /bin/sh to launch programs: no warm containers for it", sandbox.ErrSetup, image)
			}
			b.discard(bx)
			return err
		}
	}
	return nil
}

// createTimeout bounds a container's creation, which a cancelled run does
// not cut short.
const createTimeout = time.Minute

// tarFiles is the archive of a private workspace's files.
func tarFiles(files []sandbox.File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		var parents []string
		for d := path.Dir(f.Path); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: parents[i] + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		mode := int64(f.Mode.Perm())
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: mode, Size: int64(len(f.Content))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// execWait runs argv as user in bx, feeding stdin, and returns its exit
// code once its output ended.
func (b *Backend) execWait(ctx context.Context, bx *box, user string, argv []string, stdin io.Reader, out io.Writer) (int, error) {
	id, err := b.cli.ContainerExecCreate(ctx, bx.id, container.ExecOptions{
		User: user, Cmd: argv, WorkingDir: "/",
		AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("%w: exec in container: %w", sandbox.ErrSetup, err)
	}
	hj, err := b.cli.ContainerExecAttach(ctx, id.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, fmt.Errorf("%w: exec in container: %w", sandbox.ErrSetup, err)
	}
	defer hj.Close()
	if stdin != nil {
		go func() {
			_, _ = io.Copy(hj.Conn, stdin)
			_ = hj.CloseWrite()
		}()
	}
	if _, err := stdcopy.StdCopy(out, out, io.LimitReader(hj.Reader, 1<<20)); err != nil {
		return -1, fmt.Errorf("%w: exec in container: %w", sandbox.ErrSetup, err)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		ins, err := b.cli.ContainerExecInspect(ctx, id.ID)
		if err != nil {
			return -1, fmt.Errorf("%w: exec in container: %w", sandbox.ErrSetup, err)
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// take returns an idle container for key, or nil.
func (b *Backend) take(key string) *box {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs := b.idle[key]
	if len(bs) == 0 {
		return nil
	}
	bx := bs[len(bs)-1]
	if len(bs) == 1 {
		delete(b.idle, key)
	} else {
		b.idle[key] = bs[:len(bs)-1]
	}
	b.nIdle--
	b.busy[bx.id] = bx
	return bx
}

// markBusy records a new container as running a program.
func (b *Backend) markBusy(bx *box) {
	b.mu.Lock()
	b.busy[bx.id] = bx
	b.mu.Unlock()
}

// release keeps bx idle for the next run of its program, or removes it
// when it cannot be reused. What the program left running is killed now,
// from this machine; the next run's prelude empties the workspace, /tmp
// and /dev/shm and unpacks the files again before the program starts.
func (b *Backend) release(bx *box, reusable bool) {
	b.mu.Lock()
	delete(b.busy, bx.id)
	closing := b.closing
	b.mu.Unlock()
	if !reusable || closing || !b.reuse || bx.warm {
		b.discard(bx)
		if bx.warm && !closing {
			// Its replacement is made once the run is over, not while
			// it runs: the engine starts the program sooner.
			b.refill()
		}
		return
	}
	if bx.cg != nil {
		if err := bx.cg.killLeftovers(bx.uid); err != nil {
			b.log.Debug("container not reusable", "container", bx.id, "error", err)
			b.discard(bx)
			return
		}
	}
	bx.idleSince = time.Now()
	var evict *box
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		b.discard(bx)
		return
	}
	if b.nIdle >= b.maxIdle {
		evict = b.oldestIdle()
	}
	b.idle[bx.key] = append(b.idle[bx.key], bx)
	b.nIdle++
	b.mu.Unlock()
	if evict != nil {
		b.discard(evict)
	}
}

// oldestIdle removes the longest idle container from the pool; b.mu is
// held.
func (b *Backend) oldestIdle() *box {
	var oldest *box
	for _, bs := range b.idle {
		for _, bx := range bs {
			if oldest == nil || bx.idleSince.Before(oldest.idleSince) {
				oldest = bx
			}
		}
	}
	if oldest == nil {
		return nil
	}
	bs := b.idle[oldest.key]
	for i, bx := range bs {
		if bx == oldest {
			bs = append(bs[:i], bs[i+1:]...)
			break
		}
	}
	if len(bs) == 0 {
		delete(b.idle, oldest.key)
	} else {
		b.idle[oldest.key] = bs
	}
	b.nIdle--
	return oldest
}

// discard removes bx's container in the background; Close waits for it.
func (b *Backend) discard(bx *box) {
	if bx.cg != nil {
		bx.cg.close()
	}
	if bx.launch != nil {
		bx.launch.close()
	}
	if bx.id == "" {
		b.freeUser(bx)
		b.removeMountDir(bx)
		return
	}
	b.mu.Lock()
	b.gone[bx.id] = true
	b.mu.Unlock()
	b.removing.Add(1)
	go func() {
		defer b.removing.Done()
		defer func() {
			b.mu.Lock()
			delete(b.gone, bx.id)
			b.mu.Unlock()
		}()
		// Once the container is gone, nothing uses its directory in
		// the warm pool.
		defer b.removeMountDir(bx)
		// Its processes are gone once the container is (or, if its
		// removal fails, the uid is shared for a while: quotas only).
		defer b.freeUser(bx)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.cli.ContainerRemove(ctx, bx.id, container.RemoveOptions{Force: true}); err != nil && !isGone(err) {
			b.log.Warn("unable to remove container; trying again later", "container", bx.id, "error", err)
			b.orphan(bx.id)
		}
	}()
}

// isGone reports an error for a container that no longer exists or is
// already being removed.
func isGone(err error) bool {
	return cerrdefs.IsNotFound(err) || strings.Contains(err.Error(), "already in progress")
}
