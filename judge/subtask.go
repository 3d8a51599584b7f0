package judge

import (
	"fmt"
	"math"
	"sync"
)

// Subtask policies: how a subtask's tests make its score.
const (
	// PolicyAll gives the points only when every test passes (the default).
	PolicyAll = "all"
	// PolicyMin gives the points times the lowest of its tests' scores.
	PolicyMin = "min"
	// PolicySum gives the points times the mean of its tests' scores.
	PolicySum = "sum"
)

// Bounds on a request's subtasks.
const (
	// MaxSubtasks bounds the number of subtasks.
	MaxSubtasks = 1000
	// MaxSubtaskRefs bounds the test references of all the subtasks
	// together.
	MaxSubtaskRefs = 100000
	// MaxPoints bounds one subtask's points.
	MaxPoints = 1e9
)

// Subtask groups tests for scoring: the points go to a subtask according
// to its policy and its tests' results. A test may be in several subtasks,
// or in none (judged, not scored).
type Subtask struct {
	// ID names the subtask in the result.
	ID string `json:"id"`
	// Points is what the subtask is worth, at least 0.
	Points float64 `json:"points"`
	// Tests are the ids of its test cases.
	Tests []string `json:"tests"`
	// Policy is PolicyAll (default), PolicyMin or PolicySum.
	Policy string `json:"policy,omitempty"`
	// StopAtFirstFailure skips the tests of the subtask that have not
	// started once one of its tests fails, unless another subtask still
	// needs them. A skipped test's status is "skipped".
	StopAtFirstFailure bool `json:"stop_at_first_failure,omitempty"`
}

// SubtaskResult is the score of one subtask.
type SubtaskResult struct {
	// ID echoes the subtask's.
	ID string `json:"id"`
	// Score is what it earned, from 0 to MaxScore.
	Score float64 `json:"score"`
	// MaxScore is its points.
	MaxScore float64 `json:"max_score"`
	// Passed and Total count its tests.
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// validateSubtasks checks the subtasks of a request whose tests are
// valid: test ids they name exist and are unique, points are finite.
func (r ExecutionRequest) validateSubtasks() error {
	if len(r.Subtasks) == 0 {
		return nil
	}
	if len(r.Subtasks) > MaxSubtasks {
		return invalidf("Too many subtasks: %d (max %d)", len(r.Subtasks), MaxSubtasks)
	}
	tests := make(map[string]bool, len(r.TestCases))
	for _, tc := range r.TestCases {
		if tests[tc.ID] {
			return invalidf("Duplicate test id %q: tests named by subtasks need unique ids", tc.ID)
		}
		tests[tc.ID] = true
	}
	ids := make(map[string]bool, len(r.Subtasks))
	refs := 0
	for i, st := range r.Subtasks {
		switch {
		case st.ID == "":
			return invalidf("Subtask %d has no id", i)
		case len(st.ID) > MaxTestIDBytes:
			return invalidf("Subtask id too long: %d bytes (max %d)", len(st.ID), MaxTestIDBytes)
		case ids[st.ID]:
			return invalidf("Duplicate subtask id %q", st.ID)
		case math.IsNaN(st.Points) || st.Points < 0 || st.Points > MaxPoints:
			return invalidf("Invalid points for subtask %q: %g (must be between 0 and %g)", st.ID, st.Points, float64(MaxPoints))
		case st.Policy != "" && st.Policy != PolicyAll && st.Policy != PolicyMin && st.Policy != PolicySum:
			return invalidf("Invalid policy for subtask %q: %q (want all, min or sum)", st.ID, st.Policy)
		case len(st.Tests) == 0:
			return invalidf("Subtask %q has no tests", st.ID)
		}
		ids[st.ID] = true
		refs += len(st.Tests)
		if refs > MaxSubtaskRefs {
			return invalidf("Too many test references in subtasks: more than %d", MaxSubtaskRefs)
		}
		seen := make(map[string]bool, len(st.Tests))
		for _, id := range st.Tests {
			switch {
			case !tests[id]:
				return invalidf("Subtask %q names test %q, which is not among the test cases", st.ID, id)
			case seen[id]:
				return invalidf("Subtask %q names test %q twice", st.ID, id)
			}
			seen[id] = true
		}
	}
	return nil
}

// skipper decides, as results come in, which tests not yet started can
// be skipped: those whose every subtask stops at its first failure and
// has failed. It is safe for concurrent use.
type skipper struct {
	// of lists, per test index, the subtasks it belongs to; nil when no
	// subtask stops at its first failure (nothing is ever skipped).
	of      [][]int
	stops   []bool
	mu      sync.Mutex
	failing []bool
}

func newSkipper(req ExecutionRequest) *skipper {
	s := &skipper{}
	any := false
	for _, st := range req.Subtasks {
		any = any || st.StopAtFirstFailure
	}
	if !any {
		return s
	}
	index := make(map[string]int, len(req.TestCases))
	for i, tc := range req.TestCases {
		index[tc.ID] = i
	}
	s.of = make([][]int, len(req.TestCases))
	s.stops = make([]bool, len(req.Subtasks))
	s.failing = make([]bool, len(req.Subtasks))
	for k, st := range req.Subtasks {
		s.stops[k] = st.StopAtFirstFailure
		for _, id := range st.Tests {
			i := index[id]
			s.of[i] = append(s.of[i], k)
		}
	}
	return s
}

// done records test i's result.
func (s *skipper) done(i int, tr TestResult) {
	if s.of == nil || tr.Status == TestPassed {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.of[i] {
		s.failing[k] = true
	}
}

// skip reports whether test i need not run, and the subtask that failed
// first among its own.
func (s *skipper) skip(i int, req ExecutionRequest) (bool, string) {
	if s.of == nil || len(s.of[i]) == 0 {
		return false, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.of[i] {
		if !s.stops[k] || !s.failing[k] {
			return false, ""
		}
	}
	return true, req.Subtasks[s.of[i][0]].ID
}

// skippedResult is the result of a test that did not run because its
// subtasks had already failed.
func skippedResult(tc TestCase, subtask string) TestResult {
	return TestResult{
		TestID:         tc.ID,
		Status:         TestSkipped,
		ExpectedOutput: tc.ExpectedOutput,
		ErrorMessage:   strp(fmt.Sprintf("Not run: subtask %s had already failed", subtask)),
	}
}

// testScore is a test's share of the points, from 0 to 1.
func testScore(tr TestResult) float64 {
	switch {
	case tr.Status == TestPassed:
		return 1
	case tr.Status == TestPartial && tr.Points != nil:
		return min(max(*tr.Points, 0), 1)
	}
	return 0
}

// score fills in the result's score, max_score and subtask results when
// the request has subtasks; results are in request order.
func score(req ExecutionRequest, res *ExecutionResult, results []TestResult) {
	if len(req.Subtasks) == 0 {
		return
	}
	byID := make(map[string]TestResult, len(results))
	for _, tr := range results {
		byID[tr.TestID] = tr
	}
	var total, maxTotal float64
	res.SubtaskResults = make([]SubtaskResult, 0, len(req.Subtasks))
	for _, st := range req.Subtasks {
		sr := SubtaskResult{ID: st.ID, MaxScore: st.Points, Total: len(st.Tests)}
		low, sum := 1.0, 0.0
		for _, id := range st.Tests {
			tr, ran := byID[id]
			f := 0.0
			if ran {
				f = testScore(tr)
			}
			if f == 1 {
				sr.Passed++
			}
			low = min(low, f)
			sum += f
		}
		switch st.Policy {
		case PolicyMin:
			sr.Score = st.Points * low
		case PolicySum:
			sr.Score = st.Points * sum / float64(len(st.Tests))
		default:
			if sr.Passed == sr.Total {
				sr.Score = st.Points
			}
		}
		sr.Score = round6(sr.Score)
		total += sr.Score
		maxTotal += st.Points
		res.SubtaskResults = append(res.SubtaskResults, sr)
	}
	total, maxTotal = round6(total), round6(maxTotal)
	res.Score, res.MaxScore = &total, &maxTotal
}

// round6 rounds to six decimals, so that 0.1+0.2 points read 0.3.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
