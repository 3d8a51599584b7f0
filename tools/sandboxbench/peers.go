package main

// The -peers mode: coderunner's HTTP API next to go-judge's and a bare
// fork/exec of the same programs, measured in one interleaved run.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Flags of the peer comparison (-peers).
var (
	peersFlag      = flag.Bool("peers", false, "compare coderunner serve (-coderunner) with go-judge (-gojudge, optional) and bare fork/exec over HTTP, in one interleaved run: c=1 p50/p95, c=2 requests/s and whole-machine CPU per request")
	coderunnerFlag = flag.String("coderunner", "", "in -peers, the base URL of a running coderunner serve, on loopback (http://127.0.0.1:PORT)")
	gojudgeFlag    = flag.String("gojudge", "", "in -peers, the base URL of a running go-judge, on loopback (http://127.0.0.1:PORT); empty: go-judge is left out")
	judgeNFlag     = flag.Int("judge-n", 0, "in -peers, judge requests per row at c=1 (twice as many at c=2); 0: a tenth of -n, at least 5")
	judgeTestsFlag = flag.Int("judge-tests", 50, "in -peers, tests in each judge request (1 to 500)")
)

// Limits of the peer comparison.
const (
	// maxAnswer is the most of an HTTP answer read; a larger one is an error.
	maxAnswer = 8 << 20
	// peerTimeout bounds every request, so that a stuck server ends the run.
	peerTimeout = 60 * time.Second
)

// The programs, the same on every system.
const (
	trivialScript = "true\n"
	pythonScript  = "print(1)\n"
	helloC        = "#include <stdio.h>\nint main(void){puts(\"hello\");return 0;}\n"
	// sumC reads two integers and prints their sum: each judge test
	// gives it "i i+1" and expects 2i+1.
	sumC = "#include <stdio.h>\nint main(void){long a,b;if(scanf(\"%ld %ld\",&a,&b)!=2)return 1;printf(\"%ld\\n\",a+b);return 0;}\n"
)

// peerRow is one program measured on every system.
type peerRow struct {
	name string
	// n is the requests per row at c=1 (twice as many at c=2).
	n int
	// runs are one request of the program on each system, in the order
	// of the columns; nil when the system cannot run it, with errs saying
	// why.
	runs []func() error
	errs []error
}

// peerSystems are the columns: coderunner, go-judge, bare fork/exec.
var peerSystems = []string{"coderunner", "go-judge", "bare fork/exec"}

// checkLoopbackURL accepts an http URL whose host is a loopback IP address
// with a port, and nothing else: the benchmark sends nothing off the
// machine. It returns the URL without a trailing slash.
func checkLoopbackURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("%q: the scheme must be http", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("%q: give only http://HOST:PORT", s)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || port == "" {
		return "", fmt.Errorf("%q: the address needs a port", s)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%q: the host must be a loopback address (127.0.0.1 or ::1)", s)
	}
	return "http://" + u.Host, nil
}

// peerClient sends JSON to one server.
type peerClient struct {
	base string
	hc   *http.Client
}

func newPeerClient(base string) *peerClient {
	return &peerClient{base: base, hc: &http.Client{
		Timeout: peerTimeout,
		// Keep-alive connections for both workers; never a proxy.
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}}
}

// do sends method path with body (JSON when not nil) and returns the
// answer's body when its status is want.
func (c *peerClient) do(method, path string, body any, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if len(b) > maxAnswer {
		return nil, fmt.Errorf("%s %s: answer over %d bytes", method, path, maxAnswer)
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, clip(b))
	}
	return b, nil
}

// clip shortens an answer for an error message.
func clip(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// crRunRequest is a coderunner /v1/run request.
type crRunRequest struct {
	Language string             `json:"language"`
	Code     string             `json:"code"`
	Limits   map[string]float64 `json:"limits"`
}

// The limits every request gets on both servers: 10 s, 256 MB, a whole
// core (coderunner's default is half of one; go-judge sets no rate), 64
// processes where the server takes a count.
const (
	peerSeconds  = 10
	peerMemoryMB = 256
	peerProcs    = 64
)

// checkCRRun checks a coderunner /v1/run answer: a success that printed
// want.
func checkCRRun(b []byte, want string) error {
	var r struct {
		Status   string `json:"status"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("coderunner /v1/run: %w: %s", err, clip(b))
	}
	if r.Status != "success" || r.Stdout != want {
		return fmt.Errorf("coderunner /v1/run: status %q, exit %d, stdout %q (want %q), stderr %q", r.Status, r.ExitCode, r.Stdout, want, r.Stderr)
	}
	return nil
}

// checkCRJudge checks a coderunner /v1/judge answer: every one of tests
// passed.
func checkCRJudge(b []byte, tests int) error {
	var r struct {
		Status      string            `json:"status"`
		TestResults []json.RawMessage `json:"test_results"`
		Compilation string            `json:"compilation_output"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("coderunner /v1/judge: %w: %s", err, clip(b))
	}
	if r.Status != "all_passed" || len(r.TestResults) != tests {
		return fmt.Errorf("coderunner /v1/judge: status %q with %d results of %d: %s", r.Status, len(r.TestResults), tests, clip([]byte(r.Compilation)))
	}
	return nil
}

// gjCmd is one command of a go-judge /run request.
type gjCmd struct {
	Args          []string          `json:"args"`
	Env           []string          `json:"env"`
	Files         []map[string]any  `json:"files"`
	CPULimit      int64             `json:"cpuLimit"`
	ClockLimit    int64             `json:"clockLimit"`
	MemoryLimit   int64             `json:"memoryLimit"`
	ProcLimit     int               `json:"procLimit"`
	CopyIn        map[string]gjFile `json:"copyIn,omitempty"`
	CopyOutCached []string          `json:"copyOutCached,omitempty"`
}

// gjFile is a file given to go-judge: inline content or a cached file's id.
type gjFile struct {
	Content *string `json:"content,omitempty"`
	FileID  string  `json:"fileId,omitempty"`
}

// gjResult is one command's result in a go-judge /run answer.
type gjResult struct {
	Status     string            `json:"status"`
	Error      string            `json:"error"`
	ExitStatus int               `json:"exitStatus"`
	Files      map[string]string `json:"files"`
	FileIDs    map[string]string `json:"fileIds"`
}

// newGJCmd is a command with the common limits, stdin and the two
// collected output streams.
func newGJCmd(args []string, stdin string, copyIn map[string]gjFile) gjCmd {
	return gjCmd{
		Args: args,
		Env:  []string{"PATH=/usr/bin:/bin"},
		Files: []map[string]any{
			{"content": stdin},
			{"name": "stdout", "max": 1 << 20},
			{"name": "stderr", "max": 1 << 20},
		},
		CPULimit:    peerSeconds * int64(time.Second),
		ClockLimit:  peerSeconds * int64(time.Second),
		MemoryLimit: peerMemoryMB << 20,
		ProcLimit:   peerProcs,
		CopyIn:      copyIn,
	}
}

func inline(s string) gjFile { return gjFile{Content: &s} }

// parseGJResults reads a go-judge /run answer with want results, each
// accepted; it returns them.
func parseGJResults(b []byte, want int) ([]gjResult, error) {
	var rs []gjResult
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("go-judge /run: %w: %s", err, clip(b))
	}
	if len(rs) != want {
		return nil, fmt.Errorf("go-judge /run: %d results, want %d", len(rs), want)
	}
	for i, r := range rs {
		if r.Status != "Accepted" {
			return nil, fmt.Errorf("go-judge /run: command %d: status %q, exit %d, error %q, stderr %q", i, r.Status, r.ExitStatus, r.Error, r.Files["stderr"])
		}
	}
	return rs, nil
}

// gjRun sends one command and checks that it was accepted and printed want.
func (c *peerClient) gjRun(cmd gjCmd, want string) (gjResult, error) {
	b, err := c.do(http.MethodPost, "/run", map[string]any{"cmd": []gjCmd{cmd}}, http.StatusOK)
	if err != nil {
		return gjResult{}, err
	}
	rs, err := parseGJResults(b, 1)
	if err != nil {
		return gjResult{}, err
	}
	if got := rs[0].Files["stdout"]; got != want {
		return gjResult{}, fmt.Errorf("go-judge /run: stdout %q, want %q", got, want)
	}
	return rs[0], nil
}

// gjCompile compiles src with gcc in go-judge and returns the cached
// binary's file id.
func (c *peerClient) gjCompile(src string) (string, error) {
	cmd := newGJCmd([]string{"/usr/bin/gcc", "-O2", "-o", "a", "a.c"}, "", map[string]gjFile{"a.c": inline(src)})
	cmd.CopyOutCached = []string{"a"}
	r, err := c.gjRun(cmd, "")
	if err != nil {
		return "", fmt.Errorf("compiling: %w", err)
	}
	id := r.FileIDs["a"]
	if id == "" {
		return "", errors.New("go-judge /run: the compiled binary has no file id")
	}
	return id, nil
}

func (c *peerClient) gjDelete(id string) error {
	_, err := c.do(http.MethodDelete, "/file/"+url.PathEscape(id), nil, http.StatusOK)
	return err
}

// judgeSource is the judged program, new in every request (a comment
// with seq), so that no compile cache spares a compile: the judge row
// includes one on every system.
func judgeSource(seq int64) string {
	return fmt.Sprintf("/* request %d */\n%s", seq, sumC)
}

// judgeTest is test i of the judge request: two numbers in, their sum out.
func judgeTest(i int) (in, out string) {
	return fmt.Sprintf("%d %d\n", i, i+1), fmt.Sprintf("%d\n", 2*i+1)
}

// peers measures every row on every system, round-robin in batches, and
// prints the table.
func peers(n, batch, judgeN, tests int, settle time.Duration) {
	if batch < 1 || batch > 1000 {
		fail("-batch must be between 1 and 1000")
	}
	if settle < 0 || settle > time.Second {
		fail("-settle must be between 0 and 1s")
	}
	if tests < 1 || tests > 500 {
		fail("-judge-tests must be between 1 and 500")
	}
	if judgeN == 0 {
		judgeN = max(n/10, 5)
	}
	if judgeN < 1 || judgeN > 10000 {
		fail("-judge-n must be between 1 and 10000")
	}
	if *coderunnerFlag == "" {
		fail("-peers needs -coderunner URL")
	}
	crURL, err := checkLoopbackURL(*coderunnerFlag)
	if err != nil {
		fail("-coderunner: " + err.Error())
	}
	var gj *peerClient
	gjMissing := errors.New("not given (-gojudge)")
	if *gojudgeFlag != "" {
		u, err := checkLoopbackURL(*gojudgeFlag)
		if err != nil {
			fail("-gojudge: " + err.Error())
		}
		gj = newPeerClient(u)
	}
	cr := newPeerClient(crURL)

	dir, err := os.MkdirTemp("", "sandboxbench-peers-")
	if err != nil {
		fail(err.Error())
	}
	defer os.RemoveAll(dir)
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			fail(err.Error())
		}
		return p
	}
	trivialPath := write("trivial.sh", trivialScript, 0o644)
	pyPath := write("main.py", pythonScript, 0o644)
	helloSrc := write("hello.c", helloC, 0o644)
	hello := filepath.Join(dir, "hello")
	if out, err := exec.Command("gcc", "-O2", "-o", hello, helloSrc).CombinedOutput(); err != nil {
		fail(fmt.Sprintf("gcc: %v: %s", err, out))
	}
	var judgeSeq atomic.Int64

	bare := func(want, stdin string, args ...string) func() error {
		return func() error {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if string(out) != want {
				return fmt.Errorf("%s: stdout %q, want %q", args[0], out, want)
			}
			return nil
		}
	}
	crRun := func(req crRunRequest, want string) func() error {
		req.Limits = map[string]float64{"time_limit": peerSeconds, "memory_limit": peerMemoryMB, "cpu_limit": 1}
		return func() error {
			b, err := cr.do(http.MethodPost, "/v1/run", req, http.StatusOK)
			if err != nil {
				return err
			}
			return checkCRRun(b, want)
		}
	}
	gjScript := func(interp, name, script, want string) func() error {
		return func() error {
			_, err := gj.gjRun(newGJCmd([]string{interp, name}, "", map[string]gjFile{name: inline(script)}), want)
			return err
		}
	}

	rows := []*peerRow{
		{name: "trivial (bash `true`)", n: n, runs: []func() error{
			crRun(crRunRequest{Language: "bash", Code: trivialScript}, ""),
			gjScript("/bin/bash", "a.sh", trivialScript, ""),
			bare("", "", "/bin/bash", trivialPath),
		}},
		{name: "python print(1)", n: n, runs: []func() error{
			crRun(crRunRequest{Language: "python", Code: pythonScript}, "1\n"),
			gjScript("/usr/bin/python3", "a.py", pythonScript, "1\n"),
			bare("1\n", "", "/usr/bin/python3", pyPath),
		}},
		// coderunner's /v1/run takes source only and keeps no binary
		// between requests: it compiles every time (see the note printed
		// under the table).
		{name: "C hello", n: n, runs: []func() error{
			crRun(crRunRequest{Language: "c", Code: helloC}, "hello\n"),
			nil, // set below, once go-judge has the binary
			bare("hello\n", "", hello),
		}},
		{name: fmt.Sprintf("C judge, %d tests, compile included", tests), n: judgeN, runs: []func() error{
			func() error {
				cases := make([]map[string]any, tests)
				for i := range cases {
					in, out := judgeTest(i)
					cases[i] = map[string]any{"id": fmt.Sprint(i + 1), "input": in, "expected_output": out}
				}
				seq := judgeSeq.Add(1)
				b, err := cr.do(http.MethodPost, "/v1/judge", map[string]any{
					"request_id": fmt.Sprintf("peers-%d", seq), "language": "c", "code": judgeSource(seq),
					"test_cases": cases, "timeout_ms": peerSeconds * 1000, "memory_limit_mb": peerMemoryMB,
				}, http.StatusOK)
				if err != nil {
					return err
				}
				return checkCRJudge(b, tests)
			},
			func() error {
				id, err := gj.gjCompile(judgeSource(judgeSeq.Add(1)))
				if err != nil {
					return err
				}
				// The usual idiom: a /run per test, as many at once as
				// coderunner's judge runs (one per core here).
				err = concurrently(2, tests, func() error {
					i := int(judgeSeq.Add(1)) % 1000
					in, out := judgeTest(i)
					_, err := gj.gjRun(newGJCmd([]string{"a"}, in, map[string]gjFile{"a": {FileID: id}}), out)
					return err
				})
				return errors.Join(err, gj.gjDelete(id))
			},
			func() error {
				d, err := os.MkdirTemp(dir, "judge-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				src, bin := filepath.Join(d, "a.c"), filepath.Join(d, "a")
				if err := os.WriteFile(src, []byte(judgeSource(judgeSeq.Add(1))), 0o644); err != nil {
					return err
				}
				if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
					return fmt.Errorf("gcc: %w: %s", err, out)
				}
				return concurrently(2, tests, func() error {
					i := int(judgeSeq.Add(1)) % 1000
					in, out := judgeTest(i)
					return bare(out, in, bin)()
				})
			},
		}},
	}
	for _, r := range rows {
		r.errs = make([]error, len(peerSystems))
	}
	if gj == nil {
		for _, r := range rows {
			r.runs[1], r.errs[1] = nil, gjMissing
		}
	} else {
		// The C hello-world, compiled once in go-judge, outside any timing.
		id, err := gj.gjCompile(helloC)
		if err != nil {
			rows[2].errs[1] = err
		} else {
			defer func() { _ = gj.gjDelete(id) }()
			rows[2].runs[1] = func() error {
				_, err := gj.gjRun(newGJCmd([]string{"a"}, "", map[string]gjFile{"a": {FileID: id}}), "hello\n")
				return err
			}
		}
	}
	// One untimed request of each warms caches; a failure there leaves the
	// system out of the row, except for bare, to which every ratio is.
	for _, r := range rows {
		for i, run := range r.runs {
			if run == nil {
				continue
			}
			if err := run(); err != nil {
				if i == len(r.runs)-1 {
					fail(fmt.Sprintf("%s, %s: %v", r.name, peerSystems[i], err))
				}
				r.runs[i], r.errs[i] = nil, err
			}
		}
	}

	cells := make([][]cell, len(rows))
	for i := range cells {
		cells[i] = make([]cell, len(peerSystems))
	}
	rounds := (n + batch - 1) / batch
	var idle cell
	start := time.Now()
	for round := range rounds {
		for ri, r := range rows {
			k := share(r.n, rounds, round)
			if k == 0 {
				continue
			}
			for si, run := range r.runs {
				if run == nil {
					continue
				}
				cl := &cells[ri][si]
				for range k {
					t := time.Now()
					if err := run(); err != nil {
						fail(fmt.Sprintf("%s, %s: %v", r.name, peerSystems[si], err))
					}
					cl.lat = append(cl.lat, time.Since(t))
				}
				before := readProcStat()
				t := time.Now()
				if err := concurrently(2, 2*k, run); err != nil {
					fail(fmt.Sprintf("%s, %s: %v", r.name, peerSystems[si], err))
				}
				cl.elapsed += time.Since(t)
				cl.runs += 2 * k
				time.Sleep(settle)
				cl.cpu = cl.cpu.add(readProcStat().sub(before))
				cl.counted += time.Since(t)
			}
		}
		idle.measureIdle(settle)
	}
	printPeers(os.Stdout, rows, cells, idle, batch, time.Since(start))
}

// share is how many of n requests round r of rounds makes: n spread as
// evenly as the rounds allow, the earlier rounds taking the remainder.
func share(n, rounds, r int) int {
	if rounds <= 0 || r < 0 || r >= rounds {
		return 0
	}
	k := n / rounds
	if r < n%rounds {
		k++
	}
	return k
}

// peerFigures are one cell's figures.
type peerFigures struct {
	p50, p95 time.Duration
	rate     float64       // requests/s at c=2
	cpu      time.Duration // whole machine, per request at c=2, less the background
}

func figures(c cell, idle cell) peerFigures {
	lat := sortedCopy(c.lat)
	f := peerFigures{p50: percentile(lat, .5), p95: percentile(lat, .95)}
	if c.elapsed > 0 {
		f.rate = float64(c.runs) / c.elapsed.Seconds()
	}
	f.cpu, _ = netCPU(c, idle)
	return f
}

// cpuMS is a CPU figure in ms, or "-" when the background subtracted
// from it left nothing (a machine busy with other work).
func cpuMS(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return ms(d)
}

// times is a/b as "1.23x", or "-" when either is not positive.
func times(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func printPeers(w io.Writer, rows []*peerRow, cells [][]cell, idle cell, batch int, took time.Duration) {
	load := 0.0
	if idle.counted > 0 {
		load = float64(idle.cpu.busy()) / float64(idle.counted)
	}
	if load > 0.2 {
		fmt.Fprintf(w, "the machine was busy with other work (%.2f cores): the CPU figures are unreliable\n", load)
	}
	fmt.Fprintf(w, "one interleaved run over HTTP on loopback, in turns of %d requests at c=1 then %d at c=2; %.1f s; background load %.2f cores (subtracted from CPU)\n",
		batch, 2*batch, took.Seconds(), load)
	fmt.Fprintf(w, "p50/p95: ms at c=1, back to back; req/s: at c=2, back to back; CPU: whole-machine core-ms per request at c=2 (/proc/stat)\n")
	fmt.Fprintf(w, "x bare: the figure over bare fork/exec's; cr/gj: coderunner's over go-judge's (req/s above 1 and ms below 1 favour coderunner)\n\n")
	fmt.Fprintf(w, "%-36s %-15s %5s %8s %8s %8s %8s %8s %8s\n", "program", "system", "n", "p50", "p95", "req/s", "x bare", "CPU", "x bare")
	for ri, r := range rows {
		bare := figures(cells[ri][len(peerSystems)-1], idle)
		var fs []peerFigures
		for si, sys := range peerSystems {
			f := figures(cells[ri][si], idle)
			fs = append(fs, f)
			if r.runs[si] == nil {
				fmt.Fprintf(w, "%-36s %-15s unavailable: %v\n", r.name, sys, r.errs[si])
				continue
			}
			fmt.Fprintf(w, "%-36s %-15s %5d %8s %8s %8.1f %8s %8s %8s\n", r.name, sys, len(cells[ri][si].lat),
				ms(f.p50), ms(f.p95), f.rate, times(f.rate, bare.rate), cpuMS(f.cpu), times(float64(f.cpu), float64(bare.cpu)))
		}
		if r.runs[0] != nil && r.runs[1] != nil {
			fmt.Fprintf(w, "%-36s %-15s %5s %8s %8s %8s %8s %8s\n", r.name, "cr/gj", "",
				times(float64(fs[0].p50), float64(fs[1].p50)), times(float64(fs[0].p95), float64(fs[1].p95)),
				times(fs[0].rate, fs[1].rate), "", times(float64(fs[0].cpu), float64(fs[1].cpu)))
		}
	}
	fmt.Fprintf(w, "\nC hello: go-judge runs a binary compiled once (copyOutCached, then copyIn by fileId), bare runs it too;\n"+
		"coderunner's /v1/run takes source only, so each of its requests compiles with gcc and then runs.\n"+
		"C judge: every request has new source (no compile cache helps); go-judge compiles with one /run, then one /run\n"+
		"per test, two at once (as coderunner's judge runs tests here), and deletes the cached binary.\n")
}
