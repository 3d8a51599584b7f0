package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
)

// hostileTexts are program outputs that JSON encoders treat specially:
// HTML characters, the line separators JavaScript does not take in a
// string, invalid UTF-8, control characters, quotes and backslashes.
var hostileTexts = []string{
	"",
	"hello\n",
	"<script>alert('x') && 1 > 0</script>",
	"line\u2028separator\u2029paragraph",
	"\xe2\x80", "\xe2\x80\xa8\xe2", "bad \xff\xfe utf-8 \xc3",
	"\x00\x01\x07\b\f\t\r\n\x1f\x7f",
	`quote " backslash \ slash /`,
	"unicode: héllo 世界 🎉 \u00a0",
	"\\u003c already escaped",
}

// TestAppendResultMatchesSDK checks that the one-pass encoding of a result
// gives the bytes json.Marshal gives, which the SDK's server writes, for
// every shape the tools make and output that encoders treat specially.
func TestAppendResultMatchesSDK(t *testing.T) {
	var results []*mcp.CallToolResult
	for _, text := range hostileTexts {
		code := 3
		res := &execute.Result{Stdout: text, Stderr: text, Status: execute.StatusExecutionError, ExitCode: code,
			Language: "python", Backend: text}
		r, err := structured(res, executeSummary(res), false)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		r, err = structured(map[string]any{text: []any{text, 1.5, nil, true}}, text, true)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r, toolError(errors.New(text)))
	}
	for _, r := range results {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := appendResult([]byte("prefix"), r)
		if err != nil || !ok {
			t.Fatalf("appendResult did not encode %+v: %v", r, err)
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Errorf("appendResult:\n got %s\nwant %s", got[len("prefix"):], want)
		}
		if m, err := marshalResult(r); err != nil || !bytes.Equal(m, want) {
			t.Errorf("marshalResult:\n got %s\nwant %s (%v)", m, want, err)
		}
	}
}

// TestAppendResultLeavesOtherShapes checks that a result of any other
// shape goes to json.Marshal, and that marshalResult still encodes it as
// the SDK does.
func TestAppendResultLeavesOtherShapes(t *testing.T) {
	text := &mcp.TextContent{Text: "a<b"}
	for name, r := range map[string]*mcp.CallToolResult{
		"meta":             {Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{text}},
		"two contents":     {Content: []mcp.Content{text, text}},
		"no content":       {},
		"annotated":        {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"image":            {Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}},
		"raw message":      {Content: []mcp.Content{text}, StructuredContent: json.RawMessage(`{ "a" : "<" }`)},
		"a map":            {Content: []mcp.Content{text}, StructuredContent: map[string]string{"a": "<"}},
		"empty encoded":    {Content: []mcp.Content{text}, StructuredContent: encodedJSON{}},
		"request state":    {Content: []mcp.Content{text}, RequestState: "s"},
		"nil encoded json": {Content: []mcp.Content{text}, StructuredContent: encodedJSON(nil)},
	} {
		if _, ok, _ := appendResult(nil, r); ok {
			t.Errorf("%s: taken by appendResult", name)
		}
		want := *r
		if want.Content == nil {
			want.Content = []mcp.Content{}
		}
		wantData, wantErr := json.Marshal(&want)
		got, err := marshalResult(r)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, wantData) {
			t.Errorf("%s: marshalResult\n got %s (%v)\nwant %s (%v)", name, got, err, wantData, wantErr)
		}
	}
}

// TestMarshalResultAllocations checks that execute_code's result takes
// the one-pass encoding: three allocations (the text's escaping, its
// boxing, the output), where json.Marshal of the result takes five.
func TestMarshalResultAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	res := &execute.Result{Stdout: "hello\n", Status: execute.StatusSuccess, Language: "python", Backend: "native"}
	r, err := structured(res, executeSummary(res), false)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = marshalResult(r) }); n > 3 {
		t.Errorf("marshalResult allocates %v times a call, want at most 3", n)
	}
}
