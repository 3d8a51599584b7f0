package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/outstream"
)

// maxProgressChunk bounds the output one progress notification carries.
const maxProgressChunk = 8 << 10

// outputProgress sends the output of one execute_code call as progress
// notifications while the program runs: each notification's message is a
// chunk of stdout or stderr (at most maxProgressChunk bytes, whole UTF-8
// characters), its _meta.stream names which, and its progress is the
// number of output bytes sent so far, so that it grows with each one.
type outputProgress struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any
	sent    int64
	pump    *outstream.Pump
}

// streamOutput sets req's writers to send the program's output as
// progress notifications of the call; finish must be called once the run
// is over, before the call's result is sent.
func streamOutput(ctx context.Context, ss *mcp.ServerSession, token any, req *execute.Request) *outputProgress {
	op := &outputProgress{ctx: ctx, session: ss, token: token}
	op.pump = outstream.New(op.deliver, outstream.Options{MaxChunk: maxProgressChunk})
	req.Stdout, req.Stderr = op.pump.Writer(outstream.Stdout), op.pump.Writer(outstream.Stderr)
	return op
}

func (op *outputProgress) deliver(chunks []outstream.Chunk) error {
	for _, c := range chunks {
		op.sent += int64(len(c.Data))
		err := op.session.NotifyProgress(op.ctx, &mcp.ProgressNotificationParams{
			Meta:          mcp.Meta{"stream": c.Stream.String()},
			ProgressToken: op.token,
			Progress:      float64(op.sent),
			Message:       string(c.Data),
		})
		if err != nil {
			// The client is gone: the call's cancellation stops the run.
			return err
		}
	}
	return nil
}

// finish sends what the program wrote last, so that every notification
// comes before the result.
func (op *outputProgress) finish() {
	rest, err := op.pump.Close()
	if err == nil && len(rest) > 0 {
		_ = op.deliver(rest)
	}
}
