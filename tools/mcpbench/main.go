// Command mcpbench measures what MCP adds to a call of execute_code: the
// same Python print through the Go API and through MCP, in the same run,
// interleaved in a new random order each round, with p50/p95 per call
// and the difference of each to the Go API. The modes:
//
//   - the Go API in this process, and in a process of its own (the
//     baseline of the servers that run as processes of their own);
//   - MCP over stdio to `coderunner mcp` as a subprocess (as an MCP host
//     starts it): with the SDK's client on its CommandTransport, with the
//     SDK's client on mcpserver.LineTransport, and with a plain client
//     that writes and reads lines;
//   - MCP over streamable HTTP to `coderunner serve` as a subprocess (as
//     deployed: its own sandboxes, the running slots and queue /mcp
//     shares with /v1/run): with the SDK's client, and with a plain
//     client that writes HTTP/1.1 by hand;
//   - MCP over streamable HTTP and over a pipe to a server in this
//     process, through mcpserver's Handler, through the same handler
//     behind httpapi's middleware as coderunner serve mounts it (request
//     id, log, metrics, Host check, token check, running slots), and
//     through the SDK's streamable handler, with the time each call
//     spends outside the executor;
//   - the protocol alone, with an executor that answers at once, and the
//     CPU time (client and server, both in this process) per call, down
//     to an HTTP round trip with a canned answer, the floor of any HTTP
//     transport here.
//
// The plain clients do what any client must (write the request, read and
// check the answer) and nothing else: beside the Go API they show what
// the server adds, and beside the SDK's client what that client adds.
//
// Usage: mcpbench [-n 200] [-bin bin/coderunner] [-before BIN] [-warm 1] [-gogc 400] [-modes REGEXP] [-cpuprofile FILE]
//
// -before adds the serve of another build, an earlier one, with both
// clients, so that a change is measured before and after in one run.
// Besides each call's time, the report gives its time outside the
// program: the call less the program's wall time its result reports,
// which leaves out the Python run's own variation, milliseconds on a
// busy machine.
// -modes keeps the modes whose name matches REGEXP, and the two Go API
// modes, the baselines; GODEBUG and GOGC, when set, are passed to the
// subprocesses. -cpuprofile writes a CPU profile of the benchmark's
// process over the measured calls (the SDK's client, the servers in it);
// `perf record -g -p PID` on a subprocess profiles that server.
//
// It needs what the native backend needs (root, or user namespaces) and
// python3. Every loop is bounded by -n.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner"
	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/assembly"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/mcpserver"
)

const code = "print('hello')"

// The Go API modes, the baselines of the others.
const (
	apiInProcess  = "Go API (ExecuteCode)"
	apiSubprocess = "Go API (subprocess)"
)

func main() {
	if v, ok := os.LookupEnv(apiChildEnv); ok {
		warm, err := strconv.Atoi(v)
		if err == nil {
			err = apiChild(warm)
		}
		if err != nil {
			fatal(err)
		}
		return
	}
	n := flag.Int("n", 200, "calls per mode (10 to 100000)")
	bin := flag.String("bin", "bin/coderunner", "the coderunner binary for the stdio mode")
	warm := flag.Int("warm", 1, "sandboxes started ahead of need, in this process and in the subprocess")
	gogc := flag.Int("gogc", 400, "GOGC of this process, as coderunner mcp sets it for itself")
	only := flag.String("modes", "", "a regular expression: run only the modes whose name matches it, and the Go API baselines")
	profile := flag.String("cpuprofile", "", "write a CPU profile of this process (the clients, the servers in it) over the measured calls to this file")
	before := flag.String("before", "", "another coderunner binary (an earlier build) whose serve is measured beside -bin's, in the same run")
	flag.Parse()
	keep, err := regexp.Compile(*only)
	if err != nil {
		fatal(fmt.Errorf("-modes: %w", err))
	}
	debug.SetGCPercent(*gogc)
	if *n < 10 || *n > 100000 {
		fatal(errors.New("-n must be between 10 and 100000"))
	}
	if err := run(*n, *bin, *before, *warm, keep, *profile); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mcpbench:", err)
	os.Exit(1)
}

// mode is one way of making the call.
type mode struct {
	name  string
	call  func(ctx context.Context) error
	times []time.Duration
	// timed, when set, is the executor of the mode's server: the time
	// of a call outside it is what MCP adds, before and after the run.
	timed     *timingRunner
	pre, post []time.Duration
	// outside is each call's time less the program's wall time that its
	// result reports (execution_time), for the modes whose results carry
	// it: what is left of the Python run's own variation is its rounding
	// to the millisecond.
	outside []time.Duration
	// noop marks the modes whose executor answers at once: their CPU
	// time per call is the protocol's, client and server.
	noop bool
	cpu  time.Duration // per call, from a run of its own
}

func run(n int, bin, before string, warm int, keep *regexp.Regexp, profile string) error {
	ctx := context.Background()
	cfg, err := config.Load("", os.LookupEnv)
	if err != nil {
		return err
	}
	// The in-process MCP server's parts, as coderunner mcp builds them,
	// and the Go API on the same backend (the same warm sandboxes).
	parts, err := assembly.Open(ctx, assembly.Options{Config: cfg, Warm: warm, Executor: true, Sessions: true, Engine: true})
	if err != nil {
		return err
	}
	defer parts.Close()
	cr, err := coderunner.New(ctx, coderunner.Options{Sandbox: parts.Backend})
	if err != nil {
		return err
	}
	defer cr.Close()
	timed := &timingRunner{inner: parts.Runner()}
	srv, err := mcpserver.New(mcpserver.Options{Runner: timed, Languages: parts.Languages, Engine: parts.JudgeEngine(), EngineErr: parts.EngineErr})
	if err != nil {
		return err
	}
	httpSession, closeHTTP, err := serveHTTP(ctx, srv.Handler())
	if err != nil {
		return err
	}
	defer closeHTTP()
	apiSession, closeAPI, err := serveAPI(ctx, parts.Languages, timed)
	if err != nil {
		return err
	}
	defer closeAPI()
	sdkSession, closeSDK, err := serveHTTP(ctx, sdkHandler(srv))
	if err != nil {
		return err
	}
	defer closeSDK()
	stdioSession, err := startStdio(ctx, bin)
	if err != nil {
		return err
	}
	defer stdioSession.Close()
	linesSession, stopLines, err := startStdioLines(ctx, bin)
	if err != nil {
		return err
	}
	defer stopLines()
	args := map[string]any{"language": "python", "code": code}
	serveSession, serveURL, stopServe, err := startServe(ctx, bin)
	if err != nil {
		return err
	}
	defer stopServe()
	rawServe, err := openRaw(ctx, serveURL)
	if err != nil {
		return err
	}
	defer rawServe.close()
	var beforeModes []*mode
	if before != "" {
		// The same two clients on the earlier build's serve.
		session, url, stop, err := startServe(ctx, before)
		if err != nil {
			return err
		}
		defer stop()
		raw, err := openRaw(ctx, url)
		if err != nil {
			return err
		}
		defer raw.close()
		beforeModes = []*mode{
			{name: "MCP HTTP (serve subprocess, -before)", call: func(ctx context.Context) error { return callTool(ctx, session, args) }},
			{name: "MCP HTTP, plain client (serve subprocess, -before)", call: raw.call},
		}
	}
	stdioRaw, err := startRawStdio(bin)
	if err != nil {
		return err
	}
	defer stdioRaw.stop()
	apiProc, err := startAPIChild(warm)
	if err != nil {
		return err
	}
	defer apiProc.stop()

	realPipe, err := pipeSession(ctx, srv)
	if err != nil {
		return err
	}
	defer realPipe.Close()

	noop, err := mcpserver.New(mcpserver.Options{Runner: noopRunner{}, Languages: parts.Languages})
	if err != nil {
		return err
	}
	noopHTTP, closeNoopHTTP, err := serveHTTP(ctx, noop.Handler())
	if err != nil {
		return err
	}
	defer closeNoopHTTP()
	noopAPI, closeNoopAPI, err := serveAPI(ctx, parts.Languages, noopRunner{})
	if err != nil {
		return err
	}
	defer closeNoopAPI()
	noopSDK, closeNoopSDK, err := serveHTTP(ctx, sdkHandler(noop))
	if err != nil {
		return err
	}
	defer closeNoopSDK()
	noopPipe, err := pipeSession(ctx, noop)
	if err != nil {
		return err
	}
	defer noopPipe.Close()
	noopRaw, closeNoopRaw, err := serveRaw(ctx, noop.Handler())
	if err != nil {
		return err
	}
	defer closeNoopRaw()
	floorURL, closeFloor, err := listen(floorHandler())
	if err != nil {
		return err
	}
	defer closeFloor()
	floor, err := dialRaw(floorURL)
	if err != nil {
		return err
	}
	defer floor.close()

	modes := []*mode{
		{name: apiInProcess, call: func(ctx context.Context) error {
			res, err := cr.ExecuteCode(ctx, "python", code)
			if err != nil {
				return err
			}
			reportWall(ctx, res.ExecutionTime)
			return check(res)
		}},
		{name: apiSubprocess, call: apiProc.call},
		{name: "MCP HTTP (mcpserver)", timed: timed, call: func(ctx context.Context) error { return callTool(ctx, httpSession, args) }},
		{name: "MCP HTTP (httpapi, as serve mounts it)", timed: timed, call: func(ctx context.Context) error { return callTool(ctx, apiSession, args) }},
		{name: "MCP HTTP (SDK handler)", timed: timed, call: func(ctx context.Context) error { return callTool(ctx, sdkSession, args) }},
		{name: "MCP stdio (subprocess)", call: func(ctx context.Context) error { return callTool(ctx, stdioSession, args) }},
		{name: "MCP stdio, SDK client on LineTransport (subprocess)", call: func(ctx context.Context) error { return callTool(ctx, linesSession, args) }},
		{name: "MCP HTTP (serve subprocess)", call: func(ctx context.Context) error { return callTool(ctx, serveSession, args) }},
		{name: "MCP stdio, plain client (subprocess)", call: stdioRaw.call},
		{name: "MCP HTTP, plain client (serve subprocess)", call: rawServe.call},
		{name: "MCP pipe (in process)", timed: timed, call: func(ctx context.Context) error { return callTool(ctx, realPipe, args) }},
		{name: "no-op HTTP (mcpserver)", noop: true, call: func(ctx context.Context) error { return callTool(ctx, noopHTTP, args) }},
		{name: "no-op HTTP (httpapi)", noop: true, call: func(ctx context.Context) error { return callTool(ctx, noopAPI, args) }},
		{name: "no-op HTTP (SDK handler)", noop: true, call: func(ctx context.Context) error { return callTool(ctx, noopSDK, args) }},
		{name: "no-op pipe", noop: true, call: func(ctx context.Context) error { return callTool(ctx, noopPipe, args) }},
		{name: "no-op HTTP, plain client", noop: true, call: noopRaw.call},
		{name: "HTTP round trip alone, plain client", noop: true, call: floor.call},
	}
	modes = append(modes, beforeModes...)
	modes = slices.DeleteFunc(modes, func(m *mode) bool {
		return m.name != apiInProcess && m.name != apiSubprocess && !keep.MatchString(m.name)
	})
	// The Go API in this process is the baseline of the servers in this
	// process only. Without them it is left out, so that this process, the
	// client of the servers in processes of their own, runs no sandboxes,
	// as an MCP client does not: after each sandboxed run the pool starts
	// the next sandbox with a fork, and every page of the process then
	// written takes a copy-on-write fault, which would be counted as the
	// client's time.
	if !slices.ContainsFunc(modes, func(m *mode) bool { return m.timed != nil }) {
		modes = slices.DeleteFunc(modes, func(m *mode) bool { return m.name == apiInProcess })
	}
	// Warm up every path (toolchain discovery, connections, warm pools).
	for range 10 {
		for _, m := range modes {
			if err := m.call(ctx); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
	}
	// Interleave the modes, in a new order each round, so that a slow
	// moment of the machine is shared among them and no mode always
	// follows the same one: a call right after a sandboxed run in this
	// process pays for that run's teardown, about 0.25 ms of time outside
	// the executor here. The seed is fixed, so runs are comparable.
	rng := rand.New(rand.NewPCG(1, 2))
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	for range n {
		for _, j := range rng.Perm(len(modes)) {
			m := modes[j]
			wall := -1.0
			callCtx := context.WithValue(ctx, wallKey{}, &wall)
			start := time.Now()
			if err := m.call(callCtx); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			end := time.Now()
			m.times = append(m.times, end.Sub(start))
			if wall >= 0 {
				m.outside = append(m.outside, end.Sub(start)-time.Duration(wall*float64(time.Second)))
			}
			if m.timed != nil {
				m.pre = append(m.pre, m.timed.start.Sub(start))
				m.post = append(m.post, end.Sub(m.timed.end))
			}
		}
	}
	// The CPU time of the protocol, measured apart: during the loop above
	// it would carry the work that the sandboxed runs leave behind them.
	// After a pause for that work to end, the no-op modes take turns in
	// rounds of ten calls, so that what else the process does is shared.
	time.Sleep(500 * time.Millisecond)
	cpu := make(map[*mode]time.Duration)
	for range n / 10 {
		for _, j := range rng.Perm(len(modes)) {
			m := modes[j]
			if !m.noop {
				continue
			}
			before := cpuTime()
			for range 10 {
				if err := m.call(ctx); err != nil {
					return fmt.Errorf("%s: %w", m.name, err)
				}
			}
			cpu[m] += cpuTime() - before
		}
	}
	for m, d := range cpu {
		m.cpu = d / time.Duration(n/10*10)
	}
	report(os.Stdout, n, warm, modes)
	return nil
}

func check(res *execute.Result) error {
	if res.Status != execute.StatusSuccess || res.Stdout != "hello\n" {
		return fmt.Errorf("unexpected result: %s %q %s", res.Status, res.Stdout, res.Message())
	}
	return nil
}

func callTool(ctx context.Context, cs *mcp.ClientSession, args map[string]any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolExecuteCode, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool error: %v", res.Content)
	}
	// The fields the Go API's check reads, from the decoded content as
	// it is: re-encoding it to fill an execute.Result would time the
	// benchmark's own work.
	r, ok := res.StructuredContent.(map[string]any)
	if !ok {
		return fmt.Errorf("structured content %T", res.StructuredContent)
	}
	if r["status"] != string(execute.StatusSuccess) || r["stdout"] != "hello\n" {
		return fmt.Errorf("unexpected result: %v %q", r["status"], r["stdout"])
	}
	if wall, ok := r["execution_time"].(float64); ok {
		reportWall(ctx, wall)
	}
	return nil
}

// wallKey is the context key of where a call reports its program's wall
// time, in seconds.
type wallKey struct{}

// reportWall records the program's wall time of the call ctx is of.
func reportWall(ctx context.Context, seconds float64) {
	if p, ok := ctx.Value(wallKey{}).(*float64); ok {
		*p = seconds
	}
}

// executionTime is the execution_time of a result in JSON, -1 without one.
func executionTime(data []byte) float64 {
	_, rest, ok := bytes.Cut(data, []byte(`"execution_time":`))
	if !ok {
		return -1
	}
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return -1
	}
	v, err := strconv.ParseFloat(string(rest[:end]), 64)
	if err != nil {
		return -1
	}
	return v
}

// serveHTTP serves h on a loopback port and connects a client to it.
func serveHTTP(ctx context.Context, h http.Handler) (*mcp.ClientSession, func(), error) {
	return servePath(ctx, h, "")
}

// servePath serves h on a loopback port and connects a client to the
// MCP endpoint at path.
func servePath(ctx context.Context, h http.Handler, path string) (*mcp.ClientSession, func(), error) {
	url, stop, err := listen(h)
	if err != nil {
		return nil, nil, err
	}
	url += path
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return cs, func() { _ = cs.Close(); stop() }, nil
}

// serveAPI serves /mcp behind httpapi's middleware, as coderunner serve
// does (no API token: a loopback listener), with run as the runner behind
// the running slots, and connects a client to it.
func serveAPI(ctx context.Context, langs *lang.Table, run httpapi.Runner) (*mcp.ClientSession, func(), error) {
	api, err := httpapi.New(httpapi.Options{Executor: noExecutor{}, Runner: run,
		MCP: func(slotted httpapi.Runner) (http.Handler, error) {
			ms, err := mcpserver.New(mcpserver.Options{Runner: slotted, Languages: langs})
			if err != nil {
				return nil, err
			}
			return ms.NewHTTPHandler(mcpserver.HTTPOptions{}), nil
		}})
	if err != nil {
		return nil, nil, err
	}
	api.SetReady()
	return servePath(ctx, api.Handler(), "/mcp")
}

// noExecutor is the /execute executor of serveAPI, which no mode calls.
type noExecutor struct{}

func (noExecutor) Run(context.Context, invoke.Request) *invoke.Result {
	msg := "not served by mcpbench"
	return &invoke.Result{Status: invoke.StatusError, Error: &msg}
}

// sdkHandler is the SDK's streamable HTTP handler on srv, configured as
// mcpserver's Handler was before it had its own.
func sdkHandler(srv *mcpserver.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() }, &mcp.StreamableHTTPOptions{SessionTimeout: time.Hour})
}

// cpuTime is the CPU time this process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startStdio starts `bin mcp` with only HOME and PATH, as MCP hosts do.
func startStdio(ctx context.Context, bin string) (*mcp.ClientSession, error) {
	cmd := exec.Command(bin, "mcp")
	cmd.Env = childEnv()
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}

// startStdioLines starts `bin mcp` as startStdio does, and connects the
// SDK's client to it through mcpserver.LineTransport on the command's
// pipes instead of the SDK's CommandTransport. stop ends the server.
func startStdioLines(ctx context.Context, bin string) (_ *mcp.ClientSession, stop func(), err error) {
	proc, err := startPiped(nil, bin, "mcp")
	if err != nil {
		return nil, nil, err
	}
	end := proc.stop
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcpserver.LineTransport{Reader: proc.out, Writer: proc.in}, nil)
	if err != nil {
		end()
		return nil, nil, err
	}
	return cs, func() { _ = cs.Close(); end() }, nil
}

// startServe starts `bin serve` on a free loopback port, with only HOME
// and PATH, as a deployment runs it (its own sandboxes started ahead of
// need, the running slots and queue /mcp shares with /v1/run), waits for
// /health, and connects to its /mcp. stop ends the server.
func startServe(ctx context.Context, bin string) (_ *mcp.ClientSession, url string, _ func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, "", nil, err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--log-level", "error")
	cmd.Env = childEnv()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", nil, err
	}
	end := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	defer func() {
		if err != nil {
			end()
		}
	}()
	base := "http://" + addr
	ready := false
	for range 200 {
		if resp, err := http.Get(base + "/health"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = true
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ready {
		return nil, "", nil, fmt.Errorf("coderunner serve on %s did not answer /health within 10 s", addr)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		return nil, "", nil, err
	}
	return cs, base + "/mcp", func() { _ = cs.Close(); end() }, nil
}

// childEnv is the environment of a subprocess: HOME and PATH, as MCP
// hosts give, and GODEBUG and GOGC when this process has them, for
// tracing and for trying collector settings.
func childEnv() []string {
	env := []string{"HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH")}
	for _, k := range []string{"GODEBUG", "GOGC"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// pipeSession connects to srv over an in-process pipe carrying the same
// newline-delimited JSON as stdio, served as coderunner mcp serves stdio.
func pipeSession(ctx context.Context, srv *mcpserver.Server) (*mcp.ClientSession, error) {
	serverRead, clientWrite := io.Pipe()
	clientRead, serverWrite := io.Pipe()
	go func() {
		_ = srv.Run(context.Background(), &mcpserver.LineTransport{Reader: serverRead, Writer: serverWrite})
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.IOTransport{Reader: clientRead, Writer: clientWrite}, nil)
}

// timingRunner records when the last call of its executor started and
// ended; the modes call one at a time.
type timingRunner struct {
	inner      mcpserver.Runner
	start, end time.Time
}

func (t *timingRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	t.start = time.Now()
	res, err := t.inner.Execute(ctx, req)
	t.end = time.Now()
	return res, err
}

// noopRunner answers at once with a canned result.
type noopRunner struct{}

func (noopRunner) Execute(_ context.Context, req execute.Request) (*execute.Result, error) {
	return &execute.Result{Stdout: "hello\n", Status: execute.StatusSuccess, Language: req.Language, Backend: "noop"}, nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[int(p*float64(len(sorted)-1)+0.5)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%8.3f ms", float64(d)/float64(time.Millisecond)) }

func report(w io.Writer, n, warm int, modes []*mode) {
	fmt.Fprintf(w, "execute_code of %q, %d calls per mode, interleaved in random order, warm=%d\n\n", code, n, warm)
	// A server in this process is compared with the Go API in this
	// process; one in a process of its own (as deployed) with the Go API
	// in a process of its own.
	// "paired" is the median, over the rounds, of the call's time less
	// the Go API's in the same round: a slow stretch of the machine
	// weighs on both.
	fmt.Fprintf(w, "%-52s %11s %11s %11s %14s %14s %14s %14s\n", "mode", "p50", "p95", "mean", "p50 - API", "p95 - API", "paired p50", "paired p95")
	var api, sub *mode
	for _, m := range modes {
		switch m.name {
		case apiInProcess:
			api = m
		case apiSubprocess:
			sub = m
		}
	}
	for _, m := range modes {
		p50, p95, mean := stats(m.times)
		var base *mode
		switch {
		case m.name == apiInProcess || m.name == apiSubprocess:
		case m.timed != nil:
			base = api
		case strings.Contains(m.name, "subprocess"):
			base = sub
		}
		d50, d95, paired, paired95 := "", "", "", ""
		if base != nil {
			b50, b95, _ := stats(base.times)
			d50, d95 = ms(p50-b50), ms(p95-b95)
			diffs := make([]time.Duration, len(m.times))
			for i := range m.times {
				diffs[i] = m.times[i] - base.times[i]
			}
			p, q, _ := stats(diffs)
			paired, paired95 = ms(p), ms(q)
		}
		fmt.Fprintf(w, "%-52s %s %s %s %14s %14s %14s %14s\n", m.name, ms(p50), ms(p95), ms(mean), d50, d95, paired, paired95)
	}
	// The program's own time, which varies most, left out of each call.
	fmt.Fprintf(w, "\ntime outside the program (each call less the execution_time its result reports, rounded to 1 ms):\n")
	fmt.Fprintf(w, "%-52s %11s %11s %14s %14s\n", "mode", "p50", "p95", "p50 - API", "p95 - API")
	for _, m := range modes {
		if len(m.outside) != len(m.times) {
			continue
		}
		p50, p95, _ := stats(m.outside)
		var base *mode
		switch {
		case m.name == apiInProcess || m.name == apiSubprocess:
		case m.timed != nil:
			base = api
		case strings.Contains(m.name, "subprocess"):
			base = sub
		}
		d50, d95 := "", ""
		if base != nil && len(base.outside) == len(base.times) {
			b50, b95, _ := stats(base.outside)
			d50, d95 = ms(p50-b50), ms(p95-b95)
		}
		fmt.Fprintf(w, "%-52s %s %s %14s %14s\n", m.name, ms(p50), ms(p95), d50, d95)
	}
	// The differences above carry the noise of two sandboxed runs; the
	// time a call spends outside its executor carries none of it.
	fmt.Fprintf(w, "\ntime outside the executor (what MCP adds to the call):\n")
	fmt.Fprintf(w, "%-52s %11s %11s %11s %11s %11s\n", "mode", "p50", "p95", "mean", "before p50", "after p50")
	for _, m := range modes {
		if m.timed == nil {
			continue
		}
		outside := make([]time.Duration, len(m.pre))
		for i := range m.pre {
			outside[i] = m.pre[i] + m.post[i]
		}
		p50, p95, mean := stats(outside)
		pre50, _, _ := stats(m.pre)
		post50, _, _ := stats(m.post)
		fmt.Fprintf(w, "%-52s %s %s %s %s %s\n", m.name, ms(p50), ms(p95), ms(mean), ms(pre50), ms(post50))
	}
	fmt.Fprintf(w, "\nprotocol CPU per call (client and server, no-op executor, %d calls in rounds of 10):\n", n/10*10)
	for _, m := range modes {
		if m.noop {
			fmt.Fprintf(w, "%-52s %s\n", m.name, ms(m.cpu))
		}
	}
}

// stats returns the median, the 95th percentile and the mean of ds.
func stats(ds []time.Duration) (p50, p95, mean time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return percentile(s, 0.5), percentile(s, 0.95), sum / time.Duration(len(s))
}
