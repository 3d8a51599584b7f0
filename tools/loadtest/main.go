// Command loadtest sends mixed requests (hello, endless loop, fork bomb,
// memory hog) to a coderunner server on loopback and checks every answer:
// each must be 200 with the expected verdict, or 503 with Retry-After.
// Given the server's pid it measures the server's RSS, open fds, child
// processes, run cgroups and the mounts and files under the given
// directories before and after, and, over a duration, samples RSS and fds
// and computes their slope.
//
// Burst: loadtest -url http://127.0.0.1:18580 -pid PID -n 1000 -c 50 -retry
// Soak:  loadtest -url ... -pid PID -duration 30m -c 2 -sample 30s -retry
//
// It is bounded (a count or a duration, and a deadline for settling) and
// refuses any address but loopback. scripts/burst.sh and scripts/soak.sh
// start the server and run it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// kind is one of the request mixes.
type kind struct {
	name string
	body string
	// ok says whether a 200 answer is the right result.
	ok func(r runResult) bool
}

type runResult struct {
	Stdout         string `json:"stdout"`
	Status         string `json:"status"`
	MemoryExceeded bool   `json:"memory_exceeded"`
	ExitCode       int    `json:"exit_code"`
}

func body(code string, limits string) string {
	b, _ := json.Marshal(code)
	return `{"language":"python","code":` + string(b) + `,"limits":` + limits + `}`
}

var kinds = []kind{
	{"hello", body(`print("hello")`, `{"time_limit":5,"memory_limit":128}`),
		func(r runResult) bool { return r.Status == "success" && r.Stdout == "hello\n" }},
	{"loop", body("while True:\n    pass\n", `{"time_limit":1,"memory_limit":128}`),
		func(r runResult) bool { return r.Status == "timeout" }},
	{"forkbomb", body("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", `{"time_limit":1,"memory_limit":128,"pids":16}`),
		func(r runResult) bool { return r.Status == "timeout" || r.Status == "execution_error" }},
	{"memhog", body("x = []\nwhile True:\n    x.append('x' * (8 << 20))\n", `{"time_limit":5,"memory_limit":64}`),
		func(r runResult) bool { return r.Status == "execution_error" && r.MemoryExceeded }},
}

// counts are the answers seen.
type counts struct {
	ok, wrong, refused, refusedNoRetryAfter, other, transport atomic.Int64
	requests                                                  atomic.Int64
	mu                                                        sync.Mutex
	samples                                                   []string
}

func (c *counts) note(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.samples) < 10 {
		c.samples = append(c.samples, fmt.Sprintf(format, a...))
	}
}

type client struct {
	url   string
	http  *http.Client
	retry bool
	c     *counts
}

// one sends the i-th request until it gets a result (or once without
// -retry) and reports whether the result was right.
func (cl *client) one(ctx context.Context, k kind) bool {
	for attempt := 0; attempt < 1000; attempt++ {
		if ctx.Err() != nil {
			return false
		}
		cl.c.requests.Add(1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cl.url+"/v1/run", strings.NewReader(k.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.http.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				cl.c.transport.Add(1)
				cl.c.note("%s: %v", k.name, err)
			}
			return false
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			var r runResult
			if json.Unmarshal(data, &r) != nil || !k.ok(r) {
				cl.c.wrong.Add(1)
				cl.c.note("%s: wrong result %.300s", k.name, data)
				return false
			}
			cl.c.ok.Add(1)
			return true
		case http.StatusServiceUnavailable:
			cl.c.refused.Add(1)
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || ra < 0 {
				cl.c.refusedNoRetryAfter.Add(1)
				cl.c.note("%s: 503 without Retry-After: %.300s", k.name, data)
				return false
			}
			if !cl.retry {
				return false
			}
			select {
			case <-time.After(time.Duration(max(ra, 1)) * time.Second):
			case <-ctx.Done():
				return false
			}
		default:
			cl.c.other.Add(1)
			cl.c.note("%s: %d %.300s", k.name, resp.StatusCode, data)
			return false
		}
	}
	return false
}

// state is what the server holds on the host.
type state struct {
	RSSKiB    int64 `json:"rss_kib"`
	FDs       int   `json:"fds"`
	Children  int   `json:"children"`
	Cgroups   int   `json:"cgroups"`
	Mounts    int   `json:"mounts"`
	Files     int   `json:"files"`
	Threads   int   `json:"threads"`
	unixMilli int64
}

func measure(pid int, dirs []string) (state, error) {
	var s state
	s.unixMilli = time.Now().UnixMilli()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			s.RSSKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) >= 2 && f[0] == "Threads:" {
			s.Threads, _ = strconv.Atoi(f[1])
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	s.Children = descendants(pid)
	s.Cgroups = runCgroups(pid)
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		for _, d := range dirs {
			if f[4] == d || strings.HasPrefix(f[4], d+"/") {
				s.Mounts++
			}
		}
	}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && p != d {
				s.Files++
			}
			return nil
		})
	}
	return s, nil
}

// descendants counts the processes below pid.
func descendants(pid int) int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	n := 0
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				n++
				break
			}
		}
	}
	return n
}

// runCgroups counts the groups under "coderunner" in each of the
// server's own cgroups (v1 hierarchies and v2).
func runCgroups(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || strings.HasPrefix(f[1], "name=") {
			continue
		}
		mnt := "/sys/fs/cgroup"
		if f[1] != "" {
			mnt = filepath.Join(mnt, strings.Split(f[1], ",")[0])
		}
		root := filepath.Join(mnt, f[2], "coderunner")
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() && p != root {
				n++
			}
			return nil
		})
	}
	return n
}

// slope is the least-squares slope of ys over xs (per minute).
func slope(xs []float64, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

type report struct {
	Requests            int64            `json:"requests_sent"`
	Jobs                int64            `json:"jobs"`
	Correct             int64            `json:"correct_results"`
	Wrong               int64            `json:"wrong_results"`
	Refused503          int64            `json:"answers_503"`
	Refused503NoRetry   int64            `json:"answers_503_without_retry_after"`
	OtherStatus         int64            `json:"answers_other_status"`
	TransportErrors     int64            `json:"transport_errors"`
	ByKind              map[string]int64 `json:"correct_by_kind"`
	Seconds             float64          `json:"seconds"`
	Before              *state           `json:"before,omitempty"`
	After               *state           `json:"after,omitempty"`
	Samples             []state          `json:"samples,omitempty"`
	RSSSlopeKiBPerHour  float64          `json:"rss_slope_kib_per_hour"`
	FDSlopePerHour      float64          `json:"fd_slope_per_hour"`
	Examples            []string         `json:"examples,omitempty"`
	Leaks               []string         `json:"leaks,omitempty"`
	SettleSeconds       float64          `json:"settle_seconds"`
	RSSGrowthKiB        int64            `json:"rss_growth_kib"`
	ProcessRSSPeakKiB   int64            `json:"rss_peak_kib"`
	ProcessFDsPeak      int              `json:"fds_peak"`
	ProcessChildrenPeak int              `json:"children_peak"`
}

func main() {
	base := flag.String("url", "http://127.0.0.1:18580", "server `URL` (loopback only)")
	n := flag.Int("n", 1000, "requests to complete (ignored with -duration)")
	conc := flag.Int("c", 50, "concurrent clients")
	duration := flag.Duration("duration", 0, "send for this long instead of -n requests (soak)")
	retry := flag.Bool("retry", false, "honour Retry-After: resend a refused request after the time it says")
	pid := flag.Int("pid", 0, "the server's `PID`, to measure it (0: no measurements)")
	dirsFlag := flag.String("dirs", "", "comma-separated directories whose mounts and files are counted (the server's work, state and cache directories)")
	sample := flag.Duration("sample", 30*time.Second, "sampling interval of RSS and fds")
	settle := flag.Duration("settle", 60*time.Second, "the longest wait after the load for children, cgroups and mounts to return to their start")
	warm := flag.Int("warm", 8, "requests sent before the first measurement (two of each kind)")
	kept := flag.Int("kept", 0, "sandboxes the server may keep between requests (the native backend keeps up to 16, each a child process and a run cgroup, and a workspace directory per running slot, up to 32): growth up to that many child processes and run cgroups, and twice that many files, is not a leak")
	flag.Parse()

	u, err := url.Parse(*base)
	if err != nil {
		fail("-url: %v", err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fail("-url: %s is not a loopback address", u.Host)
	}
	if *kept < 0 || *kept > 1000 {
		fail("-kept %d: want 0 to 1000", *kept)
	}
	if *conc < 1 || *conc > 1000 || *n < 0 || *n > 1000000 || *duration > 24*time.Hour {
		fail("-c 1..1000, -n 0..1000000, -duration up to 24h")
	}
	var dirs []string
	for _, d := range strings.Split(*dirsFlag, ",") {
		if d != "" {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	// Bounded: nothing runs past the duration (or two hours for -n) plus
	// the settle time.
	limit := 2 * time.Hour
	if *duration > 0 {
		limit = *duration + 10*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	var c counts
	cl := &client{url: strings.TrimRight(*base, "/"), retry: *retry, c: &c,
		http: &http.Client{Timeout: 15 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}}}

	rep := report{ByKind: map[string]int64{}}
	for i := 0; i < *warm; i++ {
		cl.one(ctx, kinds[i%len(kinds)])
	}
	c = counts{}
	cl.c = &c
	if *pid > 0 {
		time.Sleep(3 * time.Second)
		s, err := measure(*pid, dirs)
		if err != nil {
			fail("measuring the server: %v", err)
		}
		rep.Before = &s
		rep.Samples = append(rep.Samples, s)
	}

	start := time.Now()
	var byKind [4]atomic.Int64
	var next atomic.Int64
	loadCtx := ctx
	if *duration > 0 {
		var stop context.CancelFunc
		loadCtx, stop = context.WithTimeout(ctx, *duration)
		defer stop()
	}
	done := make(chan struct{})
	var sampled []state
	var sampleMu sync.Mutex
	if *pid > 0 {
		go func() {
			t := time.NewTicker(*sample)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if s, err := measure(*pid, dirs); err == nil {
						sampleMu.Lock()
						sampled = append(sampled, s)
						sampleMu.Unlock()
					}
				}
			}
		}()
	}
	var wg sync.WaitGroup
	var jobs atomic.Int64
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if *duration == 0 && i >= int64(*n) {
					return
				}
				if loadCtx.Err() != nil {
					return
				}
				k := int(i % int64(len(kinds)))
				jobs.Add(1)
				if cl.one(loadCtx, kinds[k]) {
					byKind[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rep.Seconds = time.Since(start).Seconds()
	rep.Jobs = jobs.Load()
	if *duration > 0 {
		// A request cut by the end of the soak is not a failure.
		rep.Jobs = c.ok.Load() + c.wrong.Load() + c.other.Load() + c.refusedNoRetryAfter.Load() + c.transport.Load()
	}
	for i, k := range kinds {
		rep.ByKind[k.name] = byKind[i].Load()
	}
	rep.Requests, rep.Correct, rep.Wrong = c.requests.Load(), c.ok.Load(), c.wrong.Load()
	rep.Refused503, rep.Refused503NoRetry = c.refused.Load(), c.refusedNoRetryAfter.Load()
	rep.OtherStatus, rep.TransportErrors = c.other.Load(), c.transport.Load()
	rep.Examples = c.samples

	bad := rep.Wrong+rep.Refused503NoRetry+rep.OtherStatus+rep.TransportErrors > 0 ||
		(*retry && rep.Correct != rep.Jobs)
	if *pid > 0 {
		sampleMu.Lock()
		rep.Samples = append(rep.Samples, sampled...)
		sampleMu.Unlock()
		// Our own idle keep-alive connections are not the server's.
		cl.http.CloseIdleConnections()
		// Wait for the runs' teardown, bounded.
		settleStart := time.Now()
		var after state
		for {
			after, err = measure(*pid, dirs)
			if err != nil {
				fail("measuring the server: %v", err)
			}
			if after.Children <= rep.Before.Children+*kept && after.Cgroups <= rep.Before.Cgroups+*kept &&
				after.Mounts <= rep.Before.Mounts && after.Files <= rep.Before.Files+2**kept && after.FDs <= rep.Before.FDs ||
				time.Since(settleStart) > *settle {
				break
			}
			time.Sleep(time.Second)
		}
		rep.SettleSeconds = time.Since(settleStart).Seconds()
		rep.After = &after
		rep.Samples = append(rep.Samples, after)
		b := rep.Before
		for _, x := range []struct {
			what        string
			before, now int
			// kept is the growth that is the server keeping things
			// between requests (-kept), not a leak.
			kept int
		}{{"child processes", b.Children, after.Children, *kept}, {"run cgroups", b.Cgroups, after.Cgroups, *kept},
			{"mounts under the directories", b.Mounts, after.Mounts, 0}, {"files under the directories", b.Files, after.Files, 2 * *kept},
			{"open fds", b.FDs, after.FDs, 0}} {
			if x.now > x.before+x.kept {
				rep.Leaks = append(rep.Leaks, fmt.Sprintf("%s: %d at the start, %d at the end", x.what, x.before, x.now))
			}
		}
		rep.RSSGrowthKiB = after.RSSKiB - b.RSSKiB
		// The slopes are those under load: without the first tenth of
		// the samples (warming up) and the last one (idle, after it).
		var xs, rss, fds []float64
		under := rep.Samples[:len(rep.Samples)-1]
		under = under[len(under)/10:]
		for _, s := range under {
			xs = append(xs, float64(s.unixMilli-rep.Samples[0].unixMilli)/3.6e6)
			rss = append(rss, float64(s.RSSKiB))
			fds = append(fds, float64(s.FDs))
		}
		for _, s := range rep.Samples {
			rep.ProcessRSSPeakKiB = max(rep.ProcessRSSPeakKiB, s.RSSKiB)
			rep.ProcessFDsPeak = max(rep.ProcessFDsPeak, s.FDs)
			rep.ProcessChildrenPeak = max(rep.ProcessChildrenPeak, s.Children)
		}
		rep.RSSSlopeKiBPerHour = math.Round(slope(xs, rss)*10) / 10
		rep.FDSlopePerHour = math.Round(slope(xs, fds)*100) / 100
		bad = bad || len(rep.Leaks) > 0
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
	keys := make([]string, 0, len(rep.ByKind))
	for k := range rep.ByKind {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(os.Stderr, "loadtest: %d jobs, %d correct, %d wrong, %d answers 503 (%d without Retry-After), %d other, %d transport errors, %.0f s\n",
		rep.Jobs, rep.Correct, rep.Wrong, rep.Refused503, rep.Refused503NoRetry, rep.OtherStatus, rep.TransportErrors, rep.Seconds)
	if bad {
		fmt.Fprintln(os.Stderr, "loadtest: FAILED")
		os.Exit(1)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "loadtest: "+format+"\n", a...)
	os.Exit(2)
}
