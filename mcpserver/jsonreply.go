package mcpserver

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// jsonReplies answers a POST that carries one JSON-RPC call with a plain
// application/json body when the call's only message is its response,
// and with the SDK's event stream otherwise.
//
// The SDK's handler decides between an event stream and a JSON body once
// per session (StreamableHTTPOptions.JSONResponse), and a JSON session
// would send judge_code's progress notifications on the standalone GET
// stream, which a client need not open. Yet most calls (execute_code,
// list_languages, judge_code without a progress token) send nothing but
// their response, and for them the stream costs a chunked body, an event
// to frame and parse, and a second write and read for the body's end.
// The handler writes no byte of a POST's stream before its first
// message, so that message can still choose the content type: a response
// to the call (necessarily the last message, the stream ends with it)
// goes out as the whole JSON body, with its length, flushed at once;
// anything else (a progress notification, a request to the client, an
// error, a 202, a batch) passes through unchanged. Both are answers the
// transport allows for any POST that accepts both types, which the SDK
// requires of every POST.
func jsonReplies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body := &peekBody{ReadCloser: r.Body}
		r.Body = body
		jw := &jsonReplyWriter{w: w, body: body}
		next.ServeHTTP(jw, r)
		jw.finish()
	})
}

// peekBody notes the first byte of the body that is not white space: '{'
// for one message, '[' for a batch. The SDK reads the whole body before
// it writes anything.
type peekBody struct {
	io.ReadCloser
	first byte
}

func (b *peekBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.first == 0 {
		for _, c := range p[:n] {
			if !isSpace(c) {
				b.first = c
				break
			}
		}
	}
	return n, err
}

// jsonReplyWriter holds back the status of an event stream until its
// first event, then either sends that event's message as a JSON body or
// lets the stream through.
type jsonReplyWriter struct {
	w    http.ResponseWriter
	body *peekBody

	status  int  // held back; 0 if none
	decided bool // the body's type is chosen: from here on, pass through
	json    bool // the body is one JSON message, already written
}

func (j *jsonReplyWriter) Header() http.Header { return j.w.Header() }

// Unwrap lets http.ResponseController reach the connection's own
// features (deadlines, hijacking) through the wrapper.
func (j *jsonReplyWriter) Unwrap() http.ResponseWriter { return j.w }

func (j *jsonReplyWriter) WriteHeader(code int) {
	if j.decided || code != http.StatusOK || !j.isStream() {
		j.pass()
		j.w.WriteHeader(code)
		return
	}
	j.status = code
}

func (j *jsonReplyWriter) Write(p []byte) (int, error) {
	if j.json {
		// The stream ended with the response; the SDK writes nothing
		// after it, and nothing may follow a JSON body.
		return 0, http.ErrBodyNotAllowed
	}
	if !j.decided {
		if msg, ok := j.reply(p); ok {
			return len(p), j.writeJSON(msg)
		}
		j.pass()
	}
	return j.w.Write(p)
}

// Flush flushes what passed through; before the first event there is
// nothing to flush, and a JSON body is flushed as it is written.
func (j *jsonReplyWriter) Flush() {
	if j.decided && !j.json {
		_ = http.NewResponseController(j.w).Flush()
	}
}

// finish sends a status still held back when the handler wrote no event.
func (j *jsonReplyWriter) finish() {
	if !j.decided && j.status != 0 {
		j.pass()
		j.w.WriteHeader(j.status)
	}
}

func (j *jsonReplyWriter) isStream() bool {
	return j.w.Header().Get("Content-Type") == "text/event-stream"
}

// pass gives up the JSON body: what is held back goes out as it was.
func (j *jsonReplyWriter) pass() {
	if j.decided {
		return
	}
	j.decided = true
	if j.status != 0 {
		j.w.WriteHeader(j.status)
		j.status = 0
	}
}

// reply returns the message of p when p, the stream's first write, is a
// single event carrying the response to the POST's only call.
func (j *jsonReplyWriter) reply(p []byte) ([]byte, bool) {
	if j.body.first != '{' || !j.isStream() {
		return nil, false
	}
	data, ok := sseMessage(p)
	if !ok || !isResponse(data) {
		return nil, false
	}
	return data, true
}

func (j *jsonReplyWriter) writeJSON(msg []byte) error {
	j.decided, j.json = true, true
	h := j.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	// Connection: keep-alive is the SDK's for streams; a JSON body has
	// its length and needs no hint.
	h.Del("Connection")
	j.status = 0
	j.w.WriteHeader(http.StatusOK)
	if _, err := j.w.Write(msg); err != nil {
		return err
	}
	// Send it now, from the call's goroutine, rather than when the
	// request's goroutine wakes up to end the response.
	return http.NewResponseController(j.w).Flush()
}

// sseMessage returns the data of p when p is exactly one event named
// "message" with one line of data and no other field, as the SDK frames
// a message when it keeps no event store.
func sseMessage(p []byte) ([]byte, bool) {
	const head, field = "event: message\n", "data: "
	rest, ok := bytes.CutPrefix(p, []byte(head))
	if !ok {
		return nil, false
	}
	rest, ok = bytes.CutPrefix(rest, []byte(field))
	if !ok {
		return nil, false
	}
	data, ok := bytes.CutSuffix(rest, []byte("\n\n"))
	if !ok || len(data) == 0 || bytes.ContainsAny(data, "\r\n") {
		return nil, false
	}
	return data, true
}

// isResponse reports whether data is a JSON object whose first member
// among "method", "result" and "error" is "result" or "error": a
// JSON-RPC response. It reads only as far as that member, which the
// SDK's encoding puts right after "jsonrpc" and "id"; anything it cannot
// read is not a response, and the stream then passes through.
func isResponse(data []byte) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := skipString(data, i)
		if end < 0 {
			return false
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		switch string(key) {
		case "method":
			return false
		case "result", "error":
			// The value must be there; the client reads the rest.
			i = skipSpace(data, i+1)
			return i < len(data) && data[i] != '}' && data[i] != ','
		}
		i = skipValue(data, skipSpace(data, i+1))
		if i < 0 {
			return false
		}
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != ',' {
			return false
		}
		i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at data[i],
// or -1 if it does not end.
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at data[i], or -1
// if there is none. It checks brackets and strings, not the scalars
// between them: the SDK's client decodes the message in full.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		var stack []byte
		for ; i < len(data); i++ {
			switch c := data[i]; c {
			case '"':
				end := skipString(data, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				stack = append(stack, c)
			case '}', ']':
				if len(stack) == 0 || stack[len(stack)-1] != c-2 {
					return -1
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(data) && !isSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
