package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
)

// execute_code's mode: a cell's value and display in the structured
// result, its images as image content, and the refusals naming mode.
func TestExecuteCodeInterpreterMode(t *testing.T) {
	s, fr := newServer(t)
	cs := connect(t, s, "memory", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolExecuteCode,
		Arguments: map[string]any{"language": "python", "code": "x", "session_id": "nb", "mode": "interpreter"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, text(res))
	}
	if fr.last().Mode != execute.ModeInterpreter {
		t.Fatalf("mode not passed: %+v", fr.last())
	}
	var got struct {
		Value   *string           `json:"value"`
		Display []execute.Display `json:"display"`
	}
	summary := structuredInto(t, res, &got)
	if got.Value == nil || *got.Value != "'x'" || len(got.Display) != 1 || !strings.Contains(summary, "value 'x'") {
		t.Fatalf("structured: %+v, summary %q", got, summary)
	}
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" || string(img.Data[:4]) != "\x89PNG" {
		t.Fatalf("image content: %+v", img)
	}
	for _, args := range []map[string]any{
		{"language": "python", "code": "x", "mode": "interpreter"},
		{"language": "python", "code": "x", "session_id": "nb", "mode": "notebook"},
		{"language": "c", "code": "x", "session_id": "nb", "mode": "interpreter"},
		{"language": "python", "code": "x", "session_id": "nb", "mode": "interpreter", "stdin": "1"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolExecuteCode, Arguments: args})
		if err != nil || !res.IsError || !strings.Contains(text(res), `argument "mode"`) {
			t.Errorf("%v: %v %q", args, err, text(res))
		}
	}
}
