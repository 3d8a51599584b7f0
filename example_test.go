package coderunner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/coderunner/coderunner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// The examples that run code build their CodeRunner on a fake backend
// (Options.Sandbox), which runs nothing and answers each program as it is
// told, and on testdata/examples.yaml, whose python needs nothing from
// the host: so they run, and check their output, on any machine. With
// the zero Options the same calls run in the strongest sandbox that
// works here, and the package-level ExecuteCode and ExecuteWithLimits
// make them on such a CodeRunner (Default).

// ExecuteCode runs a snippet with the default limits.
func ExampleCodeRunner_ExecuteCode() {
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{
		"/usr/bin/python3": sandboxtest.Returns(sandbox.Result{Stdout: []byte("Hello, World!\n")}),
	}}
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		// Nothing from the environment (CODERUNNER_*) either.
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res, err := cr.ExecuteCode(ctx, "python", "print('Hello, World!')")
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Print(res.Stdout)
	fmt.Println(res.Status, res.ExitCode, res.LimitsApplied.TimeLimitSeconds, res.LimitsApplied.MemoryLimitMB)
	fmt.Println(fake.Last().Args)
	// Output:
	// Hello, World!
	// success 0 30 256
	// [/usr/bin/python3 /workspace/main.py]
}

// ExecuteWithLimits reports the resources a run used and the limits it
// was held to.
func ExampleCodeRunner_ExecuteWithLimits() {
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{
		"/usr/bin/python3": sandboxtest.Returns(sandbox.Result{
			WallTime: 40 * time.Millisecond, CPUTime: 30 * time.Millisecond, PeakMemory: 50 * sandbox.MiB,
		}),
	}}
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		LookupEnv:  func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	limits := coderunner.ExecutionLimits{TimeLimit: 10, MemoryLimit: 128}
	res, err := cr.ExecuteWithLimits(ctx, "python", "x = bytearray(50 << 20)", limits)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Printf("%s: peak %.0f MB of %d MB, %.2f s of %g s\n", res.Status, res.ResourceUsage.MemoryPeakMB,
		res.LimitsApplied.MemoryLimitMB, res.ExecutionTime, res.LimitsApplied.TimeLimitSeconds)
	fmt.Println(fake.Last().Limits.Memory>>20, fake.Last().Limits.WallTime)
	// Output:
	// success: peak 50 MB of 128 MB, 0.04 s of 10 s
	// 128 10s
}

// A session keeps its workspace between calls. (Not run by go test:
// a session's workspace is a size-capped tmpfs, which needs root; the
// package's tests run sessions where they can.)
func ExampleWithSession() { //nolint:testableexamples // a session needs root (see above): no output every machine gives
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	_, _ = cr.ExecuteCode(ctx, "python", "open('data.txt', 'w').write('42')", coderunner.WithSession("agent-7"))
	res, _ := cr.ExecuteCode(ctx, "bash", "cat data.txt", coderunner.WithSession("agent-7"))
	fmt.Println(res.Stdout)
	_ = cr.DeleteSession("agent-7")
}

// Validate names the field that is out of range.
func ExampleExecutionLimits_Validate() {
	limits := coderunner.DefaultLimits()
	limits.MemoryLimit = 8
	fmt.Println(limits.Validate())
	// Output: invalid execution limits: memory_limit 8 must be between 16 and 8192 MB
}

// A refused request still yields a result, with the error; the
// sandbox is never asked.
func ExampleCodeRunner_ExecuteCode_refused() {
	fake := &sandboxtest.Fake{}
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		LookupEnv:  func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res, err := cr.ExecuteCode(ctx, "cobol", "DISPLAY 'HI'.")
	fmt.Println(err != nil, res.Status, res.ExitCode)
	fmt.Println(res.Message())
	fmt.Println(fake.Runs(), "runs")
	// Output:
	// true setup_error -1
	// Unsupported language: cobol. Supported languages: bash, c, cpp, go, java, javascript, python, python3, rust.
	// 0 runs
}

// ResourceMonitor samples a process while it runs.
func ExampleResourceMonitor() {
	m := coderunner.NewResourceMonitor(coderunner.ProcessSampler(os.Getpid()))
	if err := m.Start(); err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		time.Sleep(10 * time.Millisecond)
		_ = m.Update()
	}
	u := m.Usage()
	fmt.Println(u.CPUSamples, u.MemoryPeakMB >= u.MemoryStartMB)
	// Output: 3 true
}

// The judge prepares the program once (a compiled language is compiled
// once) and runs every test case, comparing each output with the one
// expected.
func ExampleCodeRunner_Execute() {
	// The program prints 3 whatever its input: right for the first test,
	// wrong for the second.
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{
		"/usr/bin/python3": sandboxtest.Returns(sandbox.Result{Stdout: []byte("3\n")}),
	}}
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
		Code:     "print(sum(map(int, input().split())))",
		TestCases: []coderunner.TestCase{
			{ID: "small", Input: "1 2\n", ExpectedOutput: "3\n"},
			{ID: "negative", Input: "-1 -2\n", ExpectedOutput: "-3\n"},
		},
	})
	fmt.Println(res.Status, res.Summary)
	for _, t := range res.TestResults {
		fmt.Printf("%s: %s, output %q\n", t.TestID, t.Status, t.ActualOutput)
	}
	// Output:
	// some_passed 1/2 test cases passed
	// small: passed, output "3\n"
	// negative: wrong_answer, output "3\n"
}

// Fleet artifacts become judge requests.
func ExampleArtifactToExecutionRequest() {
	req, err := coderunner.ArtifactToExecutionRequest(
		coderunner.FleetArtifact{ArtifactType: "code", InlineContent: "print(input())", Metadata: map[string]any{"language": "python"}},
		[]map[string]any{{"input": "hi\n", "expected": "hi\n"}},
		coderunner.FleetRequestOptions{RequestID: "req-1"},
	)
	fmt.Println(req.RequestID, req.Language, len(req.TestCases), req.TestCases[0].ID, err)
	// Output: req-1 python 1 test_0 <nil>
}

// WithArgs and WithEnv give the program arguments and variables; a
// variable the sandbox keeps, such as LD_PRELOAD, is refused.
func ExampleWithArgs() {
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{
		"/usr/bin/python3": sandboxtest.Returns(sandbox.Result{}),
	}}
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		LookupEnv:  func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	_, err = cr.ExecuteCode(ctx, "python", "import sys; print(sys.argv)",
		coderunner.WithArgs("in.txt", "--fast"), coderunner.WithEnv(map[string]string{"MODE": "test"}))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	env := fake.Last().Env
	fmt.Println(fake.Last().Args, env[len(env)-1])
	_, err = cr.ExecuteCode(ctx, "python", "print(1)", coderunner.WithEnv(map[string]string{"LD_PRELOAD": "/workspace/x.so"}))
	fmt.Println(errors.Is(err, coderunner.ErrInvalidOption), err)
	// Output:
	// [/usr/bin/python3 /workspace/main.py in.txt --fast] MODE=test
	// true env.LD_PRELOAD: names starting with LD_ are refused
}

// WithStdout and WithStderr stream the program's output while it runs,
// here to this program's own stdout, stderr's lines marked, and the
// Result still holds both.
func ExampleWithStdout() {
	fake := &sandboxtest.Fake{Programs: map[string]sandboxtest.Step{
		"/usr/bin/python3": sandboxtest.Returns(sandbox.Result{Stdout: []byte("step 1\nstep 2\n"), Stderr: []byte("slow disk\n")}),
	}}
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{
		Sandbox:    fake,
		ConfigFile: "testdata/examples.yaml",
		LookupEnv:  func(string) (string, bool) { return "", false },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res, err := cr.ExecuteCode(ctx, "python", "print('step 1')\nprint('step 2')",
		coderunner.WithStdout(os.Stdout), coderunner.WithStderr(marked{"warning: "}))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Printf("%s, %q\n", res.Status, res.Stderr)
	// Output:
	// step 1
	// step 2
	// warning: slow disk
	// success, "slow disk\n"
}

// marked writes to stdout with a prefix before each write.
type marked struct{ prefix string }

func (m marked) Write(p []byte) (int, error) {
	fmt.Print(m.prefix, string(p))
	return len(p), nil
}
