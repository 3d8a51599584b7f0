package coderunner_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/coderunner/coderunner"
)

// ExecuteCode runs a snippet with spec 004's defaults. (Not run by go
// test: it needs a working sandbox; the package's tests run the same
// calls when one is available.)
func ExampleExecuteCode() {
	res, err := coderunner.ExecuteCode(context.Background(), "python", "print('Hello, World!')")
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Print(res.Stdout)
	fmt.Println(res.Status, res.ExitCode)
}

// ExecuteWithLimits reports the resources a run used and the limits it
// was held to.
func ExampleExecuteWithLimits() {
	limits := coderunner.ExecutionLimits{TimeLimit: 10, MemoryLimit: 128}
	res, err := coderunner.ExecuteWithLimits(context.Background(), "python", "x = bytearray(50 << 20)", limits)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Printf("%s: peak %.0f MB of %d MB\n", res.Status, res.ResourceUsage.MemoryPeakMB, res.LimitsApplied.MemoryLimitMB)
}

// A session keeps its workspace between calls.
func ExampleWithSession() {
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

// A refused request still yields spec 004's result, with the error.
func ExampleCodeRunner_ExecuteCode_refused() {
	cr, err := coderunner.New(context.Background(), coderunner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res, err := cr.ExecuteCode(context.Background(), "cobol", "DISPLAY 'HI'.")
	fmt.Println(err != nil, res.Status)
	fmt.Println(res.Message())
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

// The judge compiles once and runs every test case.
func ExampleCodeRunner_Execute() {
	ctx := context.Background()
	cr, err := coderunner.New(ctx, coderunner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cr.Close()
	res := cr.Execute(ctx, coderunner.ExecutionRequest{
		Language:  "python",
		Code:      "print(sum(map(int, input().split())))",
		TestCases: []coderunner.TestCase{{Input: "1 2\n", ExpectedOutput: "3\n"}},
	})
	fmt.Println(res.Status, res.Summary)
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
