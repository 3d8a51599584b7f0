package coderunner_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/coderunner/coderunner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// A checker judges outputs that have more than one right form: here any
// permutation of the expected numbers. It runs as checker INPUT OUTPUT
// ANSWER, with testlib's exit codes.
func ExampleCodeRunner_Execute_checker() {
	// The fake sandbox plays both programs: the solution prints "2 1"
	// whatever its input; the checker (the run given answer.txt) accepts
	// any permutation of the answer.
	python := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if !slices.Contains(spec.Args, "answer.txt") {
			return &sandbox.Result{Stdout: []byte("2 1\n")}, nil
		}
		files := map[string][]string{}
		for _, f := range spec.Files {
			w := strings.Fields(string(f.Content))
			slices.Sort(w)
			files[f.Path] = w
		}
		if slices.Equal(files["output.txt"], files["answer.txt"]) {
			return &sandbox.Result{Stdout: []byte("ok\n")}, nil
		}
		return &sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, Stdout: []byte("not a permutation\n")}, nil
	}
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{"/usr/bin/python3": python}}
	cache, err := os.MkdirTemp("", "coderunner-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(cache)
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		LookupEnv:  func(string) (string, bool) { return "", false },
		CacheDir:   cache,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res := cr.Execute(ctx, coderunner.ExecutionRequest{
		Language: "python",
		Code:     "print(*reversed(input().split()))",
		TestCases: []coderunner.TestCase{
			{ID: "pair", Input: "1 2\n", ExpectedOutput: "1 2\n"},
			{ID: "other", Input: "1 3\n", ExpectedOutput: "1 3\n"},
		},
		Checker: &coderunner.JudgeTool{Language: "python", Code: "import sys\n..."},
	})
	fmt.Println(res.Status, res.Summary)
	for _, t := range res.TestResults {
		fmt.Printf("%s: %s, checker says %q\n", t.TestID, t.Status, *t.CheckerMessage)
	}
	// Output:
	// some_passed 1/2 test cases passed
	// pair: passed, checker says "ok"
	// other: wrong_answer, checker says "not a permutation"
}
