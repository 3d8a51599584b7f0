package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// post is the decoded body of one POST: a message, or a batch of them.
type post struct {
	msgs  []jsonrpc.Message
	calls int  // requests with an id, which get a response
	batch bool // a JSON array, even of one message
	// init is set when the one message is an initialize request.
	init bool
	// token is the progress token of the one request, when it asks for
	// progress; a batch gets no progress.
	token any
}

// ids returns the ids of the post's requests.
func (p *post) ids() []jsonrpc.ID {
	ids := make([]jsonrpc.ID, 0, p.calls)
	for _, m := range p.msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// bodyError is a body that is not what the protocol allows, with the
// JSON-RPC code to answer it with.
type bodyError struct {
	code int64
	msg  string
}

func (e *bodyError) Error() string { return e.msg }

// decodePost decodes a POST body once, as LineTransport decodes a line,
// and finds what the handler routes by: whether it holds requests, which
// are initialize, and the progress token of a single request.
func decodePost(body []byte) (*post, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, &bodyError{jsonrpc.CodeParseError, "the body is empty; send one JSON-RPC message"}
	}
	msgs, err := decodeLine(body)
	if err != nil {
		code := int64(jsonrpc.CodeInvalidRequest)
		if !json.Valid(body) {
			code = jsonrpc.CodeParseError
		}
		return nil, &bodyError{code, err.Error()}
	}
	p := &post{msgs: msgs, batch: body[0] == '['}
	for _, m := range msgs {
		r, ok := m.(*jsonrpc.Request)
		if !ok || !r.IsCall() {
			continue
		}
		p.calls++
		if r.Method == methodInitialize {
			if p.batch {
				return nil, &bodyError{jsonrpc.CodeInvalidRequest, "initialize must not be part of a batch"}
			}
			p.init = true
		}
		if !p.batch {
			p.token = requestedToken(r.Params)
		}
	}
	return p, nil
}

// requestedToken is the progress token of a request's params
// (params._meta.progressToken). Most requests have none, and a look for
// the key spares them a second decode of their params.
func requestedToken(params json.RawMessage) any {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return nil
	}
	var p struct {
		Meta struct {
			Token any `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return tokenKey(p.Meta.Token)
}

// acceptance is which answers a client takes, from its Accept header.
type acceptance struct{ json, sse bool }

// accepts reads Accept headers. A client that sends none takes anything.
func accepts(values []string) acceptance {
	if len(values) == 0 {
		return acceptance{true, true}
	}
	var a acceptance
	for _, v := range values {
		for v != "" {
			var item string
			item, v, _ = strings.Cut(v, ",")
			media, _, _ := strings.Cut(item, ";")
			switch strings.ToLower(strings.TrimSpace(media)) {
			case "application/json", "application/*":
				a.json = true
			case "text/event-stream", "text/*":
				a.sse = true
			case "*/*":
				a.json, a.sse = true, true
			}
		}
	}
	return a
}

// errBatchRefused is the answer to a batch under a protocol without them.
var errBatchRefused = errors.New("JSON-RPC batches are not part of MCP protocol versions from 2025-06-18; send one message per POST")
