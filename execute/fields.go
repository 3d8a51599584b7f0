package execute

import "github.com/coderunner/coderunner/multifile"

// RunFields are the fields of a run request that every front end takes
// alike, as JSON: the body of POST /v1/run (and the first message of
// /v1/run/ws) and the arguments of MCP's execute_code embed them, each
// beside its own way of giving the limits (a "limits" object; a
// "memory_limit" argument). A field added here is added to both, so that
// they cannot drift apart; their documents (the OpenAPI schema, the tool's
// input schema) are checked against the decoders in their tests.
type RunFields struct {
	Language string `json:"language"`
	Code     string `json:"code"`
	Stdin    string `json:"stdin"`
	// Timeout is the time limit in seconds. Each front end checks it and
	// names it in its own words, so Request leaves it out.
	Timeout   *float64 `json:"timeout"`
	SessionID *string  `json:"session_id"`
	// Mode "interpreter" runs the code as a cell of the session's live
	// interpreter.
	Mode string `json:"mode"`
	// SessionTTLSeconds sets the idle timeout of the session. Like
	// Timeout, it is checked by each front end and left out of Request.
	SessionTTLSeconds *int64 `json:"session_ttl_seconds"`

	// A program of several files, and the artifacts' contents.
	Files     []multifile.File `json:"files"`
	Entry     string           `json:"entry"`
	Artifacts ArtifactOptions  `json:"artifacts"`

	Args          []string          `json:"args"`
	CompilerFlags []string          `json:"compiler_flags"`
	Env           map[string]string `json:"env"`
}

// Request is the executor's request of f run within limits. Timeout and
// SessionTTLSeconds are the caller's to check and apply.
func (f RunFields) Request(limits ExecutionLimits) Request {
	return Request{
		Language: f.Language, Code: f.Code, Stdin: f.Stdin, Limits: limits, SessionID: f.SessionID,
		Files: f.Files, Entry: f.Entry, Artifacts: f.Artifacts,
		Args: f.Args, CompilerFlags: f.CompilerFlags, Env: f.Env, Mode: f.Mode,
	}
}
