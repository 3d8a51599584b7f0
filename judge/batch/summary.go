package batch

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coderunner/coderunner/judge"
)

// PassAtK are the k of pass@k that a summary reports, when a problem has
// at least k samples.
var PassAtK = []int{1, 5, 10}

// Summary is what a batch came to. It is safe for concurrent use; its
// JSON form (Totals) is the --summary file.
type Summary struct {
	mu sync.Mutex
	Totals

	began time.Time
	run   int // results judged by this run
}

// Totals are a summary's figures.
type Totals struct {
	// Judged counts the results; Passed those that are all_passed.
	Judged int `json:"judged"`
	Passed int `json:"passed"`
	// PassRate is Passed / Judged.
	PassRate float64 `json:"pass_rate"`
	// Resumed counts the results taken from an earlier run's output.
	Resumed int `json:"resumed,omitempty"`
	// ByLanguage are the same counts per language.
	ByLanguage map[string]*Counts `json:"by_language"`
	// Verdicts counts the results by overall status.
	Verdicts map[string]int `json:"verdicts"`
	// Score and MaxScore add up the results that have a score.
	Score    float64 `json:"score,omitempty"`
	MaxScore float64 `json:"max_score,omitempty"`
	// PassAtK is the mean over the problems with at least k samples of
	// their unbiased pass@k estimate, by k; Problems has each problem's.
	PassAtK  map[string]float64  `json:"pass_at_k,omitempty"`
	Problems map[string]*Problem `json:"problems,omitempty"`
	// Seconds is the wall time of this run (not of the resumed lines),
	// and PerSecond the results it judged per second.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
}

// MarshalJSON encodes the totals as they stand.
func (s *Summary) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish()
	return json.Marshal(s.Totals)
}

// Counts are a group's results.
type Counts struct {
	Judged   int     `json:"judged"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"`
}

// Problem is one problem's samples.
type Problem struct {
	Samples int                `json:"samples"`
	Passed  int                `json:"passed"`
	PassAtK map[string]float64 `json:"pass_at_k"`
}

// NewSummary returns an empty summary.
func NewSummary() *Summary {
	return &Summary{Totals: Totals{ByLanguage: map[string]*Counts{}, Verdicts: map[string]int{}, Problems: map[string]*Problem{}}}
}

func (s *Summary) start() {
	s.mu.Lock()
	s.began = clock()
	s.mu.Unlock()
}

func (s *Summary) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish()
}

// Add counts a result judged by this run.
func (s *Summary) Add(r Result) { s.add(r, false) }

// AddResumed counts a result an earlier run wrote.
func (s *Summary) AddResumed(r Result) { s.add(r, true) }

func (s *Summary) add(r Result, resumed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	passed := r.Status == judge.StatusAllPassed
	s.Judged++
	if resumed {
		s.Resumed++
	} else {
		s.run++
	}
	lang := r.Language
	if lang == "" {
		lang = "unknown"
	}
	c := s.ByLanguage[lang]
	if c == nil {
		c = &Counts{}
		s.ByLanguage[lang] = c
	}
	c.Judged++
	s.Verdicts[string(r.Status)]++
	if r.Score != nil && r.MaxScore != nil {
		s.Score += *r.Score
		s.MaxScore += *r.MaxScore
	}
	if r.ProblemID != "" {
		p := s.Problems[r.ProblemID]
		if p == nil {
			p = &Problem{}
			s.Problems[r.ProblemID] = p
		}
		p.Samples++
		if passed {
			p.Passed++
		}
	}
	if passed {
		s.Passed++
		c.Passed++
	}
	s.finish()
}

// finish computes the rates; s.mu is held.
func (s *Summary) finish() {
	s.PassRate = rate(s.Passed, s.Judged)
	for _, c := range s.ByLanguage {
		c.PassRate = rate(c.Passed, c.Judged)
	}
	s.PassAtK = nil
	sums, counts := map[int]float64{}, map[int]int{}
	for _, p := range s.Problems {
		p.PassAtK = map[string]float64{}
		for _, k := range PassAtK {
			if p.Samples < k {
				continue
			}
			v := passAtK(p.Samples, p.Passed, k)
			p.PassAtK[fmt.Sprint(k)] = round4(v)
			sums[k] += v
			counts[k]++
		}
	}
	for _, k := range PassAtK {
		if counts[k] > 0 {
			if s.PassAtK == nil {
				s.PassAtK = map[string]float64{}
			}
			s.PassAtK[fmt.Sprint(k)] = round4(sums[k] / float64(counts[k]))
		}
	}
	if !s.began.IsZero() {
		s.Seconds = round4(clock().Sub(s.began).Seconds())
		if s.Seconds > 0 {
			s.PerSecond = round4(float64(s.run) / s.Seconds)
		}
	}
}

// passAtK is the unbiased estimate of the chance that at least one of k
// samples drawn from n, of which c are correct, is correct:
// 1 - C(n-c, k) / C(n, k), computed as a product to stay exact for large n.
func passAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

func rate(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round4(float64(a) / float64(b))
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// Snapshot returns the counts a progress line shows: judged by this run,
// passed in all, and this run's rate per second.
func (s *Summary) Snapshot() (judged, run, passed int, perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish()
	return s.Judged, s.run, s.Passed, s.PerSecond
}

// WriteText writes the summary for a person.
func (s *Summary) WriteText(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finish()
	fmt.Fprintf(w, "judged %d, passed %d (%.1f%%)", s.Judged, s.Passed, 100*s.PassRate)
	if s.Resumed > 0 {
		fmt.Fprintf(w, ", %d from an earlier run", s.Resumed)
	}
	fmt.Fprintf(w, "; %.1f s, %.2f per second\n", s.Seconds, s.PerSecond)
	langs := slices.Sorted(maps.Keys(s.ByLanguage))
	for _, l := range langs {
		c := s.ByLanguage[l]
		fmt.Fprintf(w, "  %-12s %d/%d passed (%.1f%%)\n", l, c.Passed, c.Judged, 100*c.PassRate)
	}
	verdicts := slices.Sorted(maps.Keys(s.Verdicts))
	sort.SliceStable(verdicts, func(i, j int) bool { return s.Verdicts[verdicts[i]] > s.Verdicts[verdicts[j]] })
	parts := make([]string, 0, len(verdicts))
	for _, v := range verdicts {
		parts = append(parts, fmt.Sprintf("%s %d", v, s.Verdicts[v]))
	}
	fmt.Fprintf(w, "  verdicts: %s\n", strings.Join(parts, ", "))
	if s.MaxScore > 0 {
		fmt.Fprintf(w, "  score: %g/%g\n", round4(s.Score), round4(s.MaxScore))
	}
	if len(s.PassAtK) > 0 {
		parts = parts[:0]
		for _, k := range PassAtK {
			if v, ok := s.PassAtK[fmt.Sprint(k)]; ok {
				parts = append(parts, fmt.Sprintf("pass@%d %.4f", k, v))
			}
		}
		fmt.Fprintf(w, "  %s over %d problems\n", strings.Join(parts, ", "), len(s.Problems))
	}
}
