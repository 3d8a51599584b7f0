package coderunner

import (
	"context"

	"github.com/coderunner/coderunner/judge"
)

// The judge's request, result and Fleet types, from package judge.
type (
	// ExecutionRequest asks the judge to run code against test cases.
	ExecutionRequest = judge.ExecutionRequest
	// TestCase is one input with its expected output.
	TestCase = judge.TestCase
	// ExecutionResult is the judge's answer.
	ExecutionResult = judge.ExecutionResult
	// TestResult is the verdict of one test.
	TestResult = judge.TestResult
	// JudgeTool is a request's checker or interactor program.
	JudgeTool = judge.Tool
	// FleetArtifact is the Fleet's unit of exchange.
	FleetArtifact = judge.Artifact
	// FleetRequestOptions tune ArtifactToExecutionRequest.
	FleetRequestOptions = judge.FleetRequestOptions
)

// Execute judges req: it compiles req's code once,
// runs it on every test case and judges the outputs. It never fails: a
// refused request, a compilation error and a failure of the sandbox are
// results with their status and error_info.
func (c *CodeRunner) Execute(ctx context.Context, req ExecutionRequest) ExecutionResult {
	return c.judge.Execute(ctx, req)
}

// ArtifactToExecutionRequest makes a judge request of a Fleet code
// artifact: the artifact and its test cases become a request.
func ArtifactToExecutionRequest(a FleetArtifact, testCases []map[string]any, opts FleetRequestOptions) (ExecutionRequest, error) {
	return judge.ArtifactToExecutionRequest(a, testCases, opts)
}

// ExecutionResultToArtifact makes a Fleet artifact of a judge result: a
// result becomes a Fleet artifact, with its content inline below
// judge.InlineThreshold bytes and otherwise stored under "beads:"+beadsKey
// (largeContent is then what to store there).
func ExecutionResultToArtifact(r ExecutionResult, beadsKey string) (a FleetArtifact, largeContent string) {
	return judge.ExecutionResultToArtifact(r, beadsKey)
}
