package execute

import (
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

func TestUsage(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		res  sandbox.Result
		want ResourceUsage
	}{
		{
			name: "contract example, one final sample",
			res: sandbox.Result{WallTime: 12 * ms, CPUTime: 9 * ms, PeakMemory: 7_800 * 1024 * 1024 / 1000,
				Samples: []sandbox.Sample{{At: 12 * ms, CPUTime: 9 * ms, Memory: 512 * 1024}}},
			want: ResourceUsage{ExecutionTimeSeconds: 0.012, CPUTimeSeconds: 0.009, MemoryStartMB: 0.5,
				MemoryPeakMB: 7.8, CPUSamples: 1, CPUAveragePercent: 75, CPUPeakPercent: 75},
		},
		{
			name: "per-interval peak and time-weighted average",
			res: sandbox.Result{WallTime: 200 * ms, CPUTime: 100 * ms, PeakMemory: 3 << 20,
				Samples: []sandbox.Sample{
					{At: 50 * ms, CPUTime: 10 * ms, Memory: 1 << 20},   // 20%
					{At: 100 * ms, CPUTime: 55 * ms, Memory: 2 << 20},  // 90%
					{At: 150 * ms, CPUTime: 80 * ms, Memory: 4 << 20},  // 50%
					{At: 200 * ms, CPUTime: 100 * ms, Memory: 1 << 20}, // 40%
				}},
			want: ResourceUsage{ExecutionTimeSeconds: 0.2, CPUTimeSeconds: 0.1, MemoryStartMB: 1,
				MemoryPeakMB: 4, CPUSamples: 4, CPUAveragePercent: 50, CPUPeakPercent: 90},
		},
		{
			name: "more than one core",
			res: sandbox.Result{WallTime: 100 * ms, CPUTime: 150 * ms,
				Samples: []sandbox.Sample{{At: 50 * ms, CPUTime: 50 * ms}, {At: 100 * ms, CPUTime: 150 * ms}}},
			want: ResourceUsage{ExecutionTimeSeconds: 0.1, CPUTimeSeconds: 0.15, CPUSamples: 2,
				CPUAveragePercent: 150, CPUPeakPercent: 200},
		},
		{
			name: "samples at the same instant do not divide by zero",
			res: sandbox.Result{WallTime: 10 * ms, CPUTime: 5 * ms,
				Samples: []sandbox.Sample{{At: 10 * ms, CPUTime: 5 * ms}, {At: 10 * ms, CPUTime: 5 * ms}}},
			want: ResourceUsage{ExecutionTimeSeconds: 0.01, CPUTimeSeconds: 0.005, CPUSamples: 2,
				CPUAveragePercent: 50, CPUPeakPercent: 50},
		},
		{
			name: "no samples falls back to the totals",
			res:  sandbox.Result{WallTime: time.Second, CPUTime: 250 * ms, PeakMemory: 10 << 20},
			want: ResourceUsage{ExecutionTimeSeconds: 1, CPUTimeSeconds: 0.25, MemoryStartMB: 10,
				MemoryPeakMB: 10, CPUSamples: 1, CPUAveragePercent: 25, CPUPeakPercent: 25},
		},
		{
			name: "nothing ran",
			res:  sandbox.Result{},
			want: ResourceUsage{CPUSamples: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := usage(&tt.res); got != tt.want {
				t.Errorf("usage() =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}
