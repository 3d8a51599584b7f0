package invoke

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coderunner/coderunner/internal/strictjson"
)

// Bounds of a request: code at most 1 MB, timeout 1 to 3600 s.
const (
	MaxCodeBytes   = 1 << 20
	MaxStdinBytes  = 4 << 20
	MaxEventBytes  = 1 << 20
	MinTimeout     = 1
	MaxTimeout     = 3600
	DefaultTimeout = 30
	// MaxRequestBytes is the most DecodeRequest reads.
	MaxRequestBytes = 8 << 20
)

// Modes of a request.
const (
	// ModeHandler calls handler(event) and returns its value (the default
	// for Python and JavaScript).
	ModeHandler = "handler"
	// ModeScript runs the code as a plain program (always for shell).
	ModeScript = "script"
)

// Error classes of a refused request. The error is a *FieldError naming
// the field; callers test the class with errors.Is.
var (
	// ErrInvalidRequest: the body is not a valid request (HTTP 400).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrTooLarge: the body or one of its fields is over its size limit
	// (HTTP 413).
	ErrTooLarge = errors.New("request too large")
)

// FieldError is a refused request, naming the field at fault ("body" when
// the JSON itself is malformed).
type FieldError struct {
	// Field is the JSON name of the field, e.g. "execution_id".
	Field string
	// Reason says what is wrong with it.
	Reason string
	class  error
}

// Error is "field: reason".
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap returns the class, ErrInvalidRequest or ErrTooLarge.
func (e *FieldError) Unwrap() error { return e.class }

func invalid(field, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...), class: ErrInvalidRequest}
}

func tooLarge(field, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...), class: ErrTooLarge}
}

// Request is one execution: the body of POST /execute.
type Request struct {
	// ExecutionID identifies the execution to the control plane; it
	// matches ^[A-Za-z0-9_-]{1,128}$.
	ExecutionID string `json:"execution_id"`
	// Code is the source code, at most MaxCodeBytes.
	Code string `json:"code"`
	// Language is the language table's id ("python", "python3",
	// "javascript" or "bash") after DecodeRequest resolved the name given.
	Language string `json:"language"`
	// Timeout is the wall-clock limit in whole seconds, MinTimeout to
	// MaxTimeout.
	Timeout int `json:"timeout"`
	// Stdin follows the wrapper's header on the program's standard input.
	Stdin string `json:"stdin,omitempty"`
	// Event is the JSON object given to handler(event); nil means {}.
	Event json.RawMessage `json:"event,omitempty"`
	// Mode is ModeHandler or ModeScript.
	Mode string `json:"mode"`
}

// Duration is Timeout as a time.Duration.
func (r Request) Duration() time.Duration { return time.Duration(r.Timeout) * time.Second }

// usesHandler reports whether the code is called through a wrapper.
func (r Request) usesHandler() bool { return r.Mode == ModeHandler && r.Language != "bash" }

var executionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidExecutionID reports whether id matches ^[A-Za-z0-9_-]{1,128}$, the
// only form that is safe as a file name and a URL path segment.
func ValidExecutionID(id string) bool { return executionIDPattern.MatchString(id) }

// languages maps the names /execute accepts (python, javascript and
// shell, and their aliases) to the ids of the language table.
var languages = map[string]string{
	"python": "python", "py": "python", "python3": "python3",
	"javascript": "javascript", "js": "javascript", "node": "javascript",
	"shell": "bash", "bash": "bash", "sh": "bash",
}

// wire is the JSON of a request as it arrives. Pointers tell a missing
// field from an empty one; Timeout is a number so that a fraction or a
// string is refused naming the field.
type wire struct {
	ExecutionID *string         `json:"execution_id"`
	Code        *string         `json:"code"`
	Language    *string         `json:"language"`
	Timeout     json.RawMessage `json:"timeout"`
	Stdin       *string         `json:"stdin"`
	Event       json.RawMessage `json:"event"`
	Mode        *string         `json:"mode"`
}

// DecodeRequest reads one JSON request from r and validates it. A field
// the request does not have is refused naming it (the fields above are
// all that the control plane's clients send); data after the object is
// refused. It reads at most MaxRequestBytes. Errors are *FieldError of
// class ErrInvalidRequest or ErrTooLarge.
func DecodeRequest(r io.Reader) (Request, error) {
	doc, err := io.ReadAll(&io.LimitedReader{R: r, N: MaxRequestBytes + 1})
	if len(doc) > MaxRequestBytes {
		return Request{}, tooLarge("body", "more than %d bytes", MaxRequestBytes)
	}
	if err != nil {
		return Request{}, invalid("body", "unreadable: %v", err)
	}
	dec := strictjson.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var w wire
	if err := dec.Decode(&w); err != nil {
		var uf *strictjson.UnknownFieldError
		if errors.As(strictjson.Explain(err, doc, &w), &uf) {
			return Request{}, invalid(uf.Path, "unknown field; a request has execution_id, code, language, timeout, stdin, event and mode")
		}
		return Request{}, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, invalid("body", "unexpected data after the JSON object")
	}
	return w.request()
}

// decodeError names the field of a JSON type error.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return invalid("body", "empty; a JSON object is expected")
	case errors.As(err, &te) && te.Field != "":
		return invalid(te.Field, "must be %s, not a JSON %s", expected(te.Field), te.Value)
	case errors.As(err, &te):
		return invalid("body", "must be a JSON object, not a JSON %s", te.Value)
	case errors.As(err, &se):
		return invalid("body", "malformed JSON at byte %d: %v", se.Offset, se)
	}
	return invalid("body", "malformed JSON: %v", err)
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func expected(field string) string {
	switch field {
	case "timeout":
		return "a number of seconds"
	case "event":
		return "a JSON object"
	}
	return "a string"
}

// request validates w and fills in the defaults.
func (w *wire) request() (Request, error) {
	req := Request{Timeout: DefaultTimeout, Mode: ModeHandler}
	switch {
	case w.ExecutionID == nil:
		return req, invalid("execution_id", "is required")
	case !ValidExecutionID(*w.ExecutionID):
		return req, invalid("execution_id", "must match ^[A-Za-z0-9_-]{1,128}$")
	}
	req.ExecutionID = *w.ExecutionID
	switch {
	case w.Code == nil || strings.TrimSpace(*w.Code) == "":
		return req, invalid("code", "is required and may not be empty")
	case len(*w.Code) > MaxCodeBytes:
		return req, tooLarge("code", "%d bytes, more than %d", len(*w.Code), MaxCodeBytes)
	}
	req.Code = *w.Code
	if w.Language == nil {
		return req, invalid("language", "is required: python, javascript or shell")
	}
	id, ok := languages[strings.ToLower(strings.TrimSpace(*w.Language))]
	if !ok {
		return req, invalid("language", "%q is not python, javascript or shell", *w.Language)
	}
	req.Language = id
	if t := string(bytes.TrimSpace(w.Timeout)); t != "" && t != "null" {
		// A JSON number only: ParseFloat would also take "Inf" or "0x1p4".
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || !json.Valid(w.Timeout) || t[0] == '"' || f != math.Trunc(f) || f < MinTimeout || f > MaxTimeout {
			return req, invalid("timeout", "%s must be a whole number of seconds from %d to %d", clip(t, 32), MinTimeout, MaxTimeout)
		}
		req.Timeout = int(f)
	}
	if w.Stdin != nil {
		if len(*w.Stdin) > MaxStdinBytes {
			return req, tooLarge("stdin", "%d bytes, more than %d", len(*w.Stdin), MaxStdinBytes)
		}
		req.Stdin = *w.Stdin
	}
	if ev := bytes.TrimSpace(w.Event); len(ev) > 0 && !bytes.Equal(ev, []byte("null")) {
		if len(ev) > MaxEventBytes {
			return req, tooLarge("event", "%d bytes, more than %d", len(ev), MaxEventBytes)
		}
		if ev[0] != '{' {
			return req, invalid("event", "must be a JSON object")
		}
		req.Event = json.RawMessage(bytes.Clone(ev))
	}
	if w.Mode != nil {
		switch *w.Mode {
		case ModeHandler, ModeScript:
			req.Mode = *w.Mode
		case "":
		default:
			return req, invalid("mode", "%q is not handler or script", *w.Mode)
		}
	}
	return req, nil
}
