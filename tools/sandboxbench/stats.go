package main

import (
	"slices"
	"time"
)

// percentile is the p-th quantile (0 ≤ p ≤ 1) of sorted by the nearest
// rank: the smallest sample with at least p of the samples at or below
// it. It is 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	p = min(max(p, 0), 1)
	// The rank, 1-based, rounded up: ceil(p*n), at least 1.
	r := int(p * float64(len(sorted)))
	if float64(r) < p*float64(len(sorted)) {
		r++
	}
	return sorted[max(r, 1)-1]
}

// sortedCopy returns the samples sorted, leaving s as it was.
func sortedCopy(s []time.Duration) []time.Duration {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
