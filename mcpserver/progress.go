package mcpserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/sandbox"
)

// progress sends the progress notifications of one judge_code call.
type progress struct {
	session *mcp.ServerSession
	token   any
	total   int

	mu   sync.Mutex
	done int
}

type progressKey struct{}

func withProgress(ctx context.Context, p *progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressFrom(ctx context.Context) *progress {
	p, _ := ctx.Value(progressKey{}).(*progress)
	return p
}

// notify sends the count of finished tests. Tests finish concurrently;
// the lock keeps the counts the client sees increasing.
func (p *progress) notify(ctx context.Context, step bool, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if step {
		p.done++
	}
	if msg == "" {
		msg = fmt.Sprintf("%d of %d tests run", p.done, p.total)
	}
	// A notification that cannot be sent (the client went away) changes
	// nothing for the judging.
	_ = p.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token,
		Progress:      float64(p.done),
		Total:         float64(p.total),
		Message:       msg,
	})
}

// progressEngine wraps the judge's engine to report progress to the
// client of the call whose context carries a progress.
type progressEngine struct{ judge.Engine }

func (e progressEngine) Prepare(ctx context.Context, language, code string, opts judge.ProgramOptions) (judge.Program, error) {
	prog, err := e.Engine.Prepare(ctx, language, code, opts)
	if err != nil || judge.PreparingTool(ctx) {
		// A checker's or an interactor's runs are not tests.
		return prog, err
	}
	if p := progressFrom(ctx); p != nil {
		p.notify(ctx, false, fmt.Sprintf("ready; running %d tests", p.total))
	}
	return progressProgram{prog}, nil
}

type progressProgram struct{ judge.Program }

func (p progressProgram) Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error) {
	res, err := p.Program.Run(ctx, stdin, limits)
	if pr := progressFrom(ctx); pr != nil && ctx.Err() == nil {
		pr.notify(ctx, true, "")
	}
	return res, err
}

// RunStreaming streams through to the wrapped program, so that judge_code
// judges outputs without holding them, as the other judges do.
func (p progressProgram) RunStreaming(ctx context.Context, stdin []byte, limits sandbox.Limits, out judge.RunOutput) (*sandbox.Result, error) {
	res, err := judge.RunWithOutput(ctx, p.Program, stdin, limits, out)
	if pr := progressFrom(ctx); pr != nil && ctx.Err() == nil {
		pr.notify(ctx, true, "")
	}
	return res, err
}

// Invoke runs an interactive solution through to the wrapped program.
func (p progressProgram) Invoke(ctx context.Context, inv judge.Invocation) (*sandbox.Result, error) {
	inner, ok := p.Program.(judge.Invoker)
	if !ok {
		return nil, fmt.Errorf("this engine cannot run an interactive solution")
	}
	res, err := inner.Invoke(ctx, inv)
	if pr := progressFrom(ctx); pr != nil && ctx.Err() == nil {
		pr.notify(ctx, true, "")
	}
	return res, err
}

// unavailableEngine stands in when there is no judge engine.
type unavailableEngine struct{ err error }

func (u unavailableEngine) Prepare(context.Context, string, string, judge.ProgramOptions) (judge.Program, error) {
	if u.err != nil {
		return nil, fmt.Errorf("the judge is unavailable here: %w", u.err)
	}
	return nil, fmt.Errorf("the judge is unavailable here")
}
