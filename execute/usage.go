package execute

import (
	"math"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// usage derives a result's resource_usage from the samples of a run.
//
// Each sample closes an interval that began at the previous sample (the
// first at the program's start); the CPU use of an interval is ΔCPU/Δt.
// The average is the CPU time over the wall time, which weighs intervals by
// their length (the last one is usually short), rather than a mean of the
// per-interval figures.
func usage(res *sandbox.Result) ResourceUsage {
	samples := res.Samples
	if len(samples) == 0 {
		// Backends always take a final sample; this keeps the figures
		// meaningful for one that does not.
		samples = []sandbox.Sample{{At: res.WallTime, CPUTime: res.CPUTime, Memory: res.PeakMemory}}
	}
	u := ResourceUsage{
		ExecutionTimeSeconds: round(res.WallTime.Seconds(), 3),
		CPUTimeSeconds:       round(res.CPUTime.Seconds(), 3),
		MemoryStartMB:        round(mb(samples[0].Memory), 2),
		CPUSamples:           len(samples),
	}
	peakMem := res.PeakMemory
	var prev sandbox.Sample
	peakCPU := 0.0
	for _, s := range samples {
		peakMem = max(peakMem, s.Memory)
		if dt := s.At - prev.At; dt > 0 {
			peakCPU = max(peakCPU, percent(s.CPUTime-prev.CPUTime, dt))
		}
		prev = s
	}
	u.MemoryPeakMB = round(mb(peakMem), 2)
	u.CPUPeakPercent = round(peakCPU, 1)

	cpu, wall := res.CPUTime, res.WallTime
	if wall <= 0 {
		cpu, wall = prev.CPUTime, prev.At
	}
	if wall > 0 {
		u.CPUAveragePercent = round(percent(cpu, wall), 1)
	}
	// A last interval shorter than the clock's resolution can make the
	// average exceed every measured interval; the peak is at least the
	// average by definition.
	u.CPUPeakPercent = max(u.CPUPeakPercent, u.CPUAveragePercent)
	return u
}

func percent(cpu, wall time.Duration) float64 {
	if cpu < 0 {
		return 0
	}
	return float64(cpu) / float64(wall) * 100
}

func mb(b int64) float64 { return float64(b) / float64(sandbox.MiB) }

// round rounds x to n decimals so that the JSON stays readable.
func round(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}
