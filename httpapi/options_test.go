package httpapi

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
)

// optionsRunner records the requests it gets and refuses compiler flags
// as the executor does for a language with no compile step.
type optionsRunner struct {
	mu   sync.Mutex
	reqs []execute.Request
}

func (o *optionsRunner) Execute(_ context.Context, req execute.Request) (*execute.Result, error) {
	if len(req.CompilerFlags) > 0 {
		return nil, &lang.OptionError{Field: "compiler_flags", Reason: "python has no compile step: it takes no compiler flags"}
	}
	o.mu.Lock()
	o.reqs = append(o.reqs, req)
	o.mu.Unlock()
	return fakeRunner{}.Execute(context.Background(), req)
}

// optionsJudge refuses what its engine would: a compiler flag not allowed.
type optionsJudge struct{ got []judge.ExecutionRequest }

func (o *optionsJudge) Execute(_ context.Context, req judge.ExecutionRequest) judge.ExecutionResult {
	o.got = append(o.got, req)
	if len(req.CompilerFlags) > 0 {
		return judge.InvalidRequestResult(req.RequestID, &judge.ValidationError{Message: `Invalid compiler_flags[0]: "-B/tmp" is refused`}, 3)
	}
	return fakeJudge{}.Execute(context.Background(), req)
}

func TestRunOptions(t *testing.T) {
	or := &optionsRunner{}
	s, _ := newTestServer(t, func(o *Options) { o.Runner = or })
	rec := do(t, s, "POST", "/v1/run", `{"language":"python","code":"x","args":["a","b c"],"env":{"GREETING":"hi"}}`, nil)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if len(or.reqs) != 1 || !slices.Equal(or.reqs[0].Args, []string{"a", "b c"}) || or.reqs[0].Env["GREETING"] != "hi" {
		t.Fatalf("the runner got %+v", or.reqs)
	}
	for _, tc := range []struct{ name, body, field string }{
		{"NUL argument", `{"language":"python","code":"x","args":["a\u0000b"]}`, "args[0]: contains a NUL byte"},
		{"LD_PRELOAD", `{"language":"python","code":"x","env":{"LD_PRELOAD":"/workspace/x.so"}}`, "env.LD_PRELOAD: "},
		{"PATH", `{"language":"python","code":"x","env":{"PATH":"/workspace"}}`, "env.PATH: "},
		{"lower case", `{"language":"python","code":"x","env":{"path":"x"}}`, `env["path"]: `},
		{"too many", `{"language":"python","code":"x","args":[` + strings.Repeat(`"x",`, lang.MaxArgs) + `"x"]}`, "args: 257 arguments"},
		{"flag refused by the runner", `{"language":"python","code":"x","compiler_flags":["-O2"]}`, "compiler_flags: python has no compile step"},
		{"args not strings", `{"language":"python","code":"x","args":[1]}`, "args"},
		{"env not strings", `{"language":"python","code":"x","env":{"A":1}}`, "env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, s, "POST", "/v1/run", tc.body, nil)
			if rec.Code != 400 {
				t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
			}
			if e := errOf(t, rec); e.Code != CodeBadRequest || !strings.HasPrefix(e.Message, tc.field) {
				t.Errorf("error %+v, want one starting %q", e, tc.field)
			}
		})
	}
	if len(or.reqs) != 1 {
		t.Errorf("the runner ran %d requests, want only the valid one", len(or.reqs))
	}
}

func TestJudgeOptions(t *testing.T) {
	oj := &optionsJudge{}
	s, _ := newTestServer(t, func(o *Options) { o.Judge = oj })
	const head = `{"request_id":"r","language":"c","code":"int main(){}","test_cases":[{"expected_output":""}]`
	if rec := do(t, s, "POST", "/v1/judge", head+`,"args":["1"],"env":{"N":"2"}}`, nil); rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if len(oj.got) != 1 || !slices.Equal(oj.got[0].Args, []string{"1"}) || oj.got[0].Env["N"] != "2" {
		t.Fatalf("the judge got %+v", oj.got)
	}
	for _, tc := range []struct{ name, body, msg string }{
		{"refused by the engine", head + `,"compiler_flags":["-B/tmp"]}`, `Invalid compiler_flags[0]: "-B/tmp" is refused`},
		{"LD_PRELOAD", head + `,"env":{"LD_PRELOAD":"x"}}`, "Invalid env.LD_PRELOAD"},
		{"NUL argument", head + `,"args":["\u0000"]}`, "Invalid args[0]: contains a NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, s, "POST", "/v1/judge", tc.body, nil)
			if rec.Code != 400 {
				t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
			}
			var res judge.ExecutionResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.Status != judge.StatusSandboxError || res.ErrorInfo == nil || res.ErrorInfo.Code != judge.CodeValidationError ||
				!strings.HasPrefix(res.ErrorInfo.Message, tc.msg) {
				t.Errorf("result %+v (%+v), want VALIDATION_ERROR %q", res, res.ErrorInfo, tc.msg)
			}
			if e := errOf(t, rec); e.Code != CodeValidation || !strings.HasPrefix(e.Message, tc.msg) {
				t.Errorf("error %+v, want %s %q", e, CodeValidation, tc.msg)
			}
		})
	}
}

// recordRunner records the requests it gets and answers as fakeRunner.
type recordRunner struct {
	mu   sync.Mutex
	reqs []execute.Request
}

func (r *recordRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return &execute.Result{Status: execute.StatusSuccess, Language: req.Language, Backend: "fake"}, nil
}

// One body may carry files, entry, args, compiler_flags and env together
// (and artifacts for /v1/run): each reaches the runner and the judge, and
// a fault in any of them is still named.
func TestRunAndJudgeAllOptions(t *testing.T) {
	rr, oj := &recordRunner{}, &optionsJudge{}
	s, _ := newTestServer(t, func(o *Options) { o.Runner, o.Judge = rr, oj })
	const program = `"language":"c","files":[{"path":"main.c","content":"int main(){}"},` +
		`{"path":"lib/x.c","content":"aW50IHg7Cg==","encoding":"base64"}],"entry":"main.c",` +
		`"args":["one","two words"],"compiler_flags":["-DX=3","-O0"],"env":{"GREETING":"hi"}`
	if rec := do(t, s, "POST", "/v1/run", `{`+program+`,"artifacts":{"include_content":true,"max_bytes":4096}}`, nil); rec.Code != 200 {
		t.Fatalf("/v1/run status %d: %s", rec.Code, rec.Body)
	}
	if len(rr.reqs) != 1 {
		t.Fatalf("the runner got %d requests", len(rr.reqs))
	}
	got := rr.reqs[0]
	if len(got.Files) != 2 || got.Files[1].Path != "lib/x.c" || got.Files[1].Encoding != "base64" || got.Entry != "main.c" ||
		!slices.Equal(got.Args, []string{"one", "two words"}) || !slices.Equal(got.CompilerFlags, []string{"-DX=3", "-O0"}) ||
		got.Env["GREETING"] != "hi" || !got.Artifacts.IncludeContent || got.Artifacts.MaxBytes != 4096 {
		t.Errorf("the runner got %+v", got)
	}

	// The judge takes the same fields; its fake refuses any compiler flag,
	// so these go without.
	const judged = `"language":"c","files":[{"path":"main.c","content":"int main(){}"}],"entry":"main.c",` +
		`"args":["a"],"env":{"N":"2"},"test_cases":[{"expected_output":""}]`
	if rec := do(t, s, "POST", "/v1/judge", `{`+judged+`}`, nil); rec.Code != 200 {
		t.Fatalf("/v1/judge status %d: %s", rec.Code, rec.Body)
	}
	if len(oj.got) != 1 || len(oj.got[0].Files) != 1 || oj.got[0].Entry != "main.c" || !slices.Equal(oj.got[0].Args, []string{"a"}) ||
		oj.got[0].Env["N"] != "2" {
		t.Errorf("the judge got %+v", oj.got)
	}

	for _, tc := range []struct{ name, body, field string }{
		{"bad file with good options", `{` + strings.Replace(program, `"lib/x.c"`, `"../x.c"`, 1) + `}`, "files[1].path: "},
		{"bad variable with good files", `{` + strings.Replace(program, `"GREETING"`, `"LD_PRELOAD"`, 1) + `}`, "env.LD_PRELOAD: "},
		{"bad argument with good files", `{` + strings.Replace(program, `"two words"`, `"a\u0000b"`, 1) + `}`, "args[1]: contains a NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, s, "POST", "/v1/run", tc.body, nil)
			if e := errOf(t, rec); rec.Code != 400 || !strings.HasPrefix(e.Message, tc.field) {
				t.Errorf("status %d error %+v, want 400 starting %q", rec.Code, e, tc.field)
			}
		})
	}
	if len(rr.reqs) != 1 {
		t.Errorf("the runner ran %d requests, want only the valid one", len(rr.reqs))
	}
}
