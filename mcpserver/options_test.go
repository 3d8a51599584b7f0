package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
)

// optionsEngine records the options judge_code prepares a program with.
type optionsEngine struct{ got *[]judge.ProgramOptions }

func (e optionsEngine) Prepare(_ context.Context, _, code string, opts judge.ProgramOptions) (judge.Program, error) {
	*e.got = append(*e.got, opts)
	return fakeProgram{code: code}, nil
}

func TestExecuteCodeOptions(t *testing.T) {
	s, fr := newServer(t)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := connect(t, s, tr, nil)
			res := call(t, cs, ToolExecuteCode, map[string]any{"language": "c", "code": "print x",
				"args": []string{"1", "two words"}, "compiler_flags": []string{"-O0", "-DX=3"}, "env": map[string]string{"GREETING": "hi"}})
			if res.IsError {
				t.Fatalf("tool error: %s", text(res))
			}
			req := fr.last()
			if !slices.Equal(req.Args, []string{"1", "two words"}) || !slices.Equal(req.CompilerFlags, []string{"-O0", "-DX=3"}) || req.Env["GREETING"] != "hi" {
				t.Errorf("request %+v", req)
			}
		})
	}
}

func TestExecuteCodeRefusedOptions(t *testing.T) {
	s, fr := newServer(t)
	before := len(fr.reqs)
	cs := connect(t, s, "memory", nil)
	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"denied flag", map[string]any{"language": "c", "compiler_flags": []string{"-B/tmp"}}, `argument compiler_flags[0]: "-B/tmp" is refused`},
		{"flag not allowed", map[string]any{"language": "c", "compiler_flags": []string{"-fplugin=x"}}, `argument compiler_flags[0]: "-fplugin=x" is refused`},
		{"@file", map[string]any{"language": "cpp", "compiler_flags": []string{"@/etc/passwd"}}, `argument compiler_flags[0]: "@/etc/passwd" does not start with "-"`},
		{"flag for python", map[string]any{"language": "python", "compiler_flags": []string{"-O2"}}, "argument compiler_flags: python has no compile step"},
		{"LD_PRELOAD", map[string]any{"language": "python", "env": map[string]string{"LD_PRELOAD": "x.so"}}, "argument env.LD_PRELOAD: names starting with LD_ are refused"},
		{"JAVA_HOME", map[string]any{"language": "java", "env": map[string]string{"JAVA_HOME": "/workspace"}}, "argument env.JAVA_HOME: set by the java language's recipe"},
		{"NUL", map[string]any{"language": "python", "args": []string{"a\x00"}}, "argument args[0]: contains a NUL byte"},
		{"args type", map[string]any{"language": "python", "args": "a b"}, `argument "args" must be an array, not a string`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.args["code"] = "print x"
			res := call(t, cs, ToolExecuteCode, tt.args)
			if !res.IsError || !strings.Contains(text(res), tt.want) {
				t.Errorf("isError %v, text %q; want an error containing %q", res.IsError, text(res), tt.want)
			}
		})
	}
	if len(fr.reqs) != before {
		t.Errorf("%d refused calls reached the runner", len(fr.reqs)-before)
	}
}

func TestJudgeCodeOptions(t *testing.T) {
	var got []judge.ProgramOptions
	s, err := New(Options{Runner: newFakeRunner(), Languages: lang.Default(), Engine: optionsEngine{&got}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, "memory", nil)
	res := call(t, cs, ToolJudgeCode, map[string]any{"language": "python", "code": "echo",
		"test_cases": []map[string]any{{"input": "1\n", "expected_output": "1\n"}},
		"args":       []string{"--fast"}, "compiler_flags": []string{"-O1"}, "env": map[string]string{"N": "1"}})
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	if len(got) != 1 || !slices.Equal(got[0].Args, []string{"--fast"}) || !slices.Equal(got[0].CompilerFlags, []string{"-O1"}) || got[0].Env["N"] != "1" {
		t.Errorf("engine got %+v", got)
	}
	res = call(t, cs, ToolJudgeCode, map[string]any{"language": "python", "code": "echo",
		"test_cases": []map[string]any{{"input": "", "expected_output": ""}}, "env": map[string]string{"LD_AUDIT": "x"}})
	var r judge.ExecutionResult
	structuredInto(t, res, &r)
	if !res.IsError || r.ErrorInfo == nil || r.ErrorInfo.Code != judge.CodeValidationError || !strings.Contains(text(res), "env.LD_AUDIT") {
		t.Errorf("LD_AUDIT: isError %v, text %s", res.IsError, text(res))
	}
}
