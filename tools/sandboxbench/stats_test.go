package main

import (
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	in := "cpu  700 20 240 250 30 4 16 1642 3 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 12\n"
	c, err := parseProcStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	tick := 10 * time.Millisecond
	if want := (700 + 20) * tick; c.user != want {
		t.Errorf("user = %v, want %v (user + nice; guest is inside user)", c.user, want)
	}
	if want := (240 + 4 + 16) * tick; c.system != want {
		t.Errorf("system = %v, want %v (system + irq + softirq)", c.system, want)
	}
	if want := (250 + 30) * tick; c.idle != want {
		t.Errorf("idle = %v, want %v (idle + iowait; steal is neither)", c.idle, want)
	}
	if want := (700 + 20 + 240 + 4 + 16) * tick; c.busy() != want {
		t.Errorf("busy = %v, want %v", c.busy(), want)
	}
	d := c.sub(cpuTimes{user: tick, system: 2 * tick, idle: 3 * tick})
	if d.user != 719*tick || d.system != 258*tick || d.idle != 277*tick {
		t.Errorf("sub = %+v", d)
	}
	if s := d.add(cpuTimes{user: tick, system: 2 * tick, idle: 3 * tick}); s != c {
		t.Errorf("add = %+v, want %+v", s, c)
	}
}

func TestParseProcStatOldKernel(t *testing.T) {
	c, err := parseProcStat(strings.NewReader("cpu 1 2 3 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.user != 30*time.Millisecond || c.system != 30*time.Millisecond || c.idle != 40*time.Millisecond {
		t.Errorf("got %+v", c)
	}
}

func TestParseProcStatRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"cpu0 1 2 3 4\n",
		"cpu 1 2 3\n",
		"cpu 1 2 x 4\n",
		"cpu 1 -2 3 4\n",
		"cpu 1 2 3 99999999999999999999\n",
		"cpu 1 2 3 9223372036854775807\n",
		"cpu 1 2 3 " + strings.Repeat("9", 2<<20) + "\n",
	} {
		if c, err := parseProcStat(strings.NewReader(in)); err == nil {
			t.Errorf("%.40q: no error, got %+v", in, c)
		}
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, c := range []struct {
		s    []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, .5, 0},
		{ms(7), .5, 7 * time.Millisecond},
		{ms(7), .95, 7 * time.Millisecond},
		{ms(1, 2), .5, 1 * time.Millisecond},
		{ms(1, 2, 3), .5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), .5, 2 * time.Millisecond},
		{ms(hundred...), .5, 50 * time.Millisecond},
		{ms(hundred...), .95, 95 * time.Millisecond},
		{ms(hundred...), .99, 99 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred...), 0, 1 * time.Millisecond},
		{ms(hundred...), -1, 1 * time.Millisecond},
		{ms(hundred...), 2, 100 * time.Millisecond},
		{ms(hundred[:20]...), .95, 19 * time.Millisecond},
		{ms(hundred[:21]...), .95, 20 * time.Millisecond},
	} {
		if got := percentile(c.s, c.p); got != c.want {
			t.Errorf("percentile(%d samples, %v) = %v, want %v", len(c.s), c.p, got, c.want)
		}
	}
}

func TestSortedCopyLeavesInput(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	out := sortedCopy(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("input changed: %v", in)
	}
	if out[0] != 1 || out[1] != 2 || out[2] != 3 {
		t.Errorf("sortedCopy = %v", out)
	}
}

func TestNetCPU(t *testing.T) {
	tick := 10 * time.Millisecond
	// 1 s of idle time measured with 0.5 cores busy (0.1 s of it in the
	// kernel); a cell counted over 2 s with 1.6 s busy (0.6 s kernel) in
	// 100 runs: less 1 s of background (0.2 s kernel), 6 ms per run (4 in
	// the kernel).
	idle := cell{cpu: cpuTimes{user: 40 * tick, system: 10 * tick}, counted: time.Second}
	c := cell{cpu: cpuTimes{user: 100 * tick, system: 60 * tick}, counted: 2 * time.Second, runs: 100}
	total, sys := netCPU(c, idle)
	if total != 6*time.Millisecond || sys != 4*time.Millisecond {
		t.Errorf("netCPU = %v, %v; want 6ms, 4ms", total, sys)
	}
	if total, sys := netCPU(cell{}, idle); total != 0 || sys != 0 {
		t.Errorf("no runs: %v, %v", total, sys)
	}
	if total, _ := netCPU(c, cell{}); total != 16*time.Millisecond {
		t.Errorf("no idle measured: %v, want 16ms", total)
	}
}

func TestParseBackends(t *testing.T) {
	got := parseBackends(" bwrap, native,,bwrap,docker-per-run ")
	want := []string{"native", "bwrap", "docker-per-run"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("parseBackends = %v, want %v", got, want)
	}
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		comm string
		ppid int
	}{
		{"2 (kthreadd) S 0 0 0 0 -1", "kthreadd", 0},
		{"77 (kworker/u8:3-events_unbound) I 2 0 0", "kworker/u8:3-events_unbound", 2},
		{"9 (a) b) S 1 9) R 4242 1", "a) b) S 1 9", 4242},
		{"10 (with space) S 3 1", "with space", 3},
	} {
		comm, ppid, err := parseStat([]byte(c.in))
		if err != nil || comm != c.comm || ppid != c.ppid {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d", c.in, comm, ppid, err, c.comm, c.ppid)
		}
	}
	for _, in := range []string{"", "1 kthreadd S 0", "1 (x S 0", "1 (x) S", "1 (x) S -1 0", "1 (x) S y 0", ")1 (x S 2"} {
		if comm, ppid, err := parseStat([]byte(in)); err == nil {
			t.Errorf("parseStat(%q) = %q, %d; want an error", in, comm, ppid)
		}
	}
}

func TestParseStatTimes(t *testing.T) {
	// utime 3, stime 4, cutime 5, cstime 6 ticks, after a name with
	// parentheses and spaces.
	in := "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 3 4 5 6 20 0 1 0 123 4096 10\n"
	got, err := parseStatTimes([]byte(in))
	if err != nil || got.user != 8*clockTick || got.system != 10*clockTick {
		t.Errorf("parseStatTimes = %+v, %v; want user 80ms, system 100ms", got, err)
	}
	for _, in := range []string{"", "42 x S 1", "42 (x) S 1 2 3", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 x 4 5 6 20", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 3 -4 5 6 20"} {
		if got, err := parseStatTimes([]byte(in)); err == nil {
			t.Errorf("parseStatTimes(%q) = %+v; want an error", in, got)
		}
	}
}

// TestOwnTrackerCountsLiveChildren: a child still running when the count
// ends, having reaped a spinning child of its own (as a kept sandbox's
// init reaps its runs), is counted too.
func TestOwnTrackerCountsLiveChildren(t *testing.T) {
	var o ownTracker
	before := o.read(false)
	cmd := exec.Command("/bin/sh", "-c", "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; echo reaped; read line")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	buf := make([]byte, 7)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "reaped\n" {
		t.Fatalf("the child said %q, %v", buf, err)
	}
	d := o.read(true).since(before)
	if d.user+d.system < clockTick {
		t.Errorf("a living child's reaped work was not counted: %+v", d)
	}
}

func TestParseSchedstat(t *testing.T) {
	d, err := parseSchedstat([]byte("9714941 15680289 125\n"))
	if err != nil || d != 9714941*time.Nanosecond {
		t.Errorf("parseSchedstat = %v, %v", d, err)
	}
	for _, in := range []string{"", "1 2", "1 2 3 4", "x 2 3", "-1 2 3", "99999999999999999999 2 3"} {
		if d, err := parseSchedstat([]byte(in)); err == nil {
			t.Errorf("parseSchedstat(%q) = %v; want an error", in, d)
		}
	}
}

func TestOwnTrackerCountsChildren(t *testing.T) {
	// A child that spins for a while in user mode must show up once waited
	// for; a kernel thread list is found (kthreadd at least).
	var o ownTracker
	o.refresh()
	if len(o.pids) == 0 {
		t.Fatal("no kernel threads found under /proc")
	}
	before := o.read(false)
	if err := exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	d := o.read(true).since(before)
	if d.user <= 0 {
		t.Errorf("a spinning child's user time was not counted: %+v", d)
	}
}

func TestOwnSampleSince(t *testing.T) {
	before := ownSample{self: cpuTimes{user: 10, system: 20}, threads: map[int]time.Duration{2: 100, 7: 50, 9: 5}}
	// 7 exited; 11 is new: neither counts, nor does a pid whose time went
	// back (reused).
	after := ownSample{self: cpuTimes{user: 15, system: 30}, threads: map[int]time.Duration{2: 130, 9: 1, 11: 1000}}
	d := after.since(before)
	if d.user != 5 || d.system != 10+30 {
		t.Errorf("since = %+v, want user 5, system 40", d)
	}
}
