package mcpserver

import (
	"bytes"
	"context"
	"testing"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/sandbox"
)

// streamingFake streams its output to the run's writers and keeps only
// out.Keep bytes in the Result, as runner.Program does.
type streamingFake struct{ fakeProgram }

func (streamingFake) RunStreaming(_ context.Context, stdin []byte, _ sandbox.Limits, out judge.RunOutput) (*sandbox.Result, error) {
	_, _ = out.Stdout.Write(stdin)
	return &sandbox.Result{Status: sandbox.StatusOK, Stdout: stdin[:min(int64(len(stdin)), out.Keep)]}, nil
}

type streamingEngine struct{}

func (streamingEngine) Prepare(context.Context, string, string, judge.ProgramOptions) (judge.Program, error) {
	return streamingFake{}, nil
}

// judge_code's progress wrapper streams through: the judge's writers get
// the output and the Result keeps only what was asked.
func TestProgressProgramStreams(t *testing.T) {
	prog, err := progressEngine{streamingEngine{}}.Prepare(context.Background(), "python", "x", judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := prog.(judge.StreamingProgram); !ok {
		t.Fatal("the progress wrapper is not a judge.StreamingProgram")
	}
	var out bytes.Buffer
	in := bytes.Repeat([]byte("y"), 100)
	res, err := judge.RunWithOutput(context.Background(), prog, in, sandbox.Limits{}, judge.RunOutput{Stdout: &out, Keep: 10})
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() != 100 || len(res.Stdout) != 10 {
		t.Errorf("the writer got %d bytes and the Result keeps %d; want 100 and 10", out.Len(), len(res.Stdout))
	}
}
