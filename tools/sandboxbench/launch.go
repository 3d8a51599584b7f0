package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

var launchFlag = flag.Bool("docker-launch", false, "compare, for a trivial run, a bare docker exec through the engine's API, the docker warm pool running its program with docker exec, and the warm pool's launcher (no exec), interleaved; c=1, p50/p95/mean in ms")

// dockerLaunch measures a trivial run three ways, round-robin in batches
// of batch runs each, so that the machine's load hits all alike: a bare
// exec of /bin/true in a running container (the engine's API, as the
// backend calls it: create, attach, then inspect until it ended), and
// the backend's warm pool with exec and with its launcher, every run a
// new program with a capped host workspace of its own, as /v1/run.
func dockerLaunch(n, batch int) {
	langs, err := lang.New(map[string]lang.Recipe{"python": {Image: *imageFlag}, "bash": {Image: *imageFlag}})
	if err != nil {
		fail(err.Error())
	}
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		fail(err.Error())
	}
	defer cli.Close()
	init := true
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: *imageFlag, Cmd: []string{"sleep", "3600"}, User: "65533:65533"},
		&container.HostConfig{NetworkMode: "none", Init: &init, AutoRemove: true}, nil, nil, "")
	if err != nil {
		fail(err.Error())
	}
	defer func() {
		_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
	}()
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		fail(err.Error())
	}
	bareExec := func() error {
		ex, err := cli.ContainerExecCreate(ctx, c.ID, container.ExecOptions{Cmd: []string{"/bin/true"}, AttachStdout: true, AttachStderr: true})
		if err != nil {
			return err
		}
		hj, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
		if err != nil {
			return err
		}
		defer hj.Close()
		if _, err := stdcopy.StdCopy(io.Discard, io.Discard, hj.Reader); err != nil {
			return err
		}
		for {
			ins, err := cli.ContainerExecInspect(ctx, ex.ID)
			if err != nil {
				return err
			}
			if !ins.Running {
				if ins.ExitCode != 0 {
					return fmt.Errorf("exit %d", ins.ExitCode)
				}
				return nil
			}
			time.Sleep(time.Millisecond)
		}
	}
	open := func(execPath bool) *docker.Backend {
		b, err := docker.New(docker.Options{Languages: langs, DefaultImage: *imageFlag, PullPolicy: docker.PullNever, Warm: 2, WarmExec: execPath})
		if err != nil {
			fail(err.Error())
		}
		return b
	}
	viaExec, viaLauncher := open(true), open(false)
	defer viaExec.Close()
	defer viaLauncher.Close()
	seq := 0
	pooled := func(b *docker.Backend) func() error {
		return func() error {
			seq++
			ws, err := capws.New("", "sandboxbench-", sandbox.DefaultLimits.WorkspaceSize, 0)
			if err != nil {
				return err
			}
			defer func() { _ = ws.Remove() }()
			return runOK(b, &sandbox.Spec{Args: []string{"/bin/true"}, Env: []string{fmt.Sprintf("RUN=%d", seq)}, Workspace: ws.Path})
		}
	}
	rows := []struct {
		name  string
		run   func() error
		ready func()
		lat   []time.Duration
	}{
		{name: "bare docker exec (API)", run: bareExec},
		{name: "warm pool, docker exec", run: pooled(viaExec), ready: warmReady(viaExec)},
		{name: "warm pool, launcher", run: pooled(viaLauncher), ready: warmReady(viaLauncher)},
	}
	// Untimed: the pools learn the run, caches warm up.
	for i := range rows {
		if err := rows[i].run(); err != nil {
			fail(fmt.Sprintf("%s: %v", rows[i].name, err))
		}
	}
	for done := 0; done < n; done += batch {
		k := min(batch, n-done)
		for i := range rows {
			r := &rows[i]
			for range k {
				if r.ready != nil {
					r.ready()
				}
				t := time.Now()
				if err := r.run(); err != nil {
					fail(fmt.Sprintf("%s: %v", r.name, err))
				}
				r.lat = append(r.lat, time.Since(t))
			}
		}
	}
	fmt.Printf("a trivial run (/bin/true) on docker, concurrency 1, %d runs each, interleaved in batches of %d; latency in ms\n\n", n, batch)
	fmt.Printf("%-26s %8s %8s %8s\n", "", "p50", "p95", "mean")
	for _, r := range rows {
		s := sortedCopy(r.lat)
		var sum time.Duration
		for _, d := range s {
			sum += d
		}
		fmt.Printf("%-26s %8s %8s %8s\n", r.name, ms(percentile(s, .5)), ms(percentile(s, .95)), ms(sum/time.Duration(len(s))))
	}
	fmt.Printf("\nwarm pool, docker exec: %+v\nwarm pool, launcher:    %+v\n", viaExec.Warm(), viaLauncher.Warm())
}
