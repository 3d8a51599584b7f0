// Package httpapi is coderunner's HTTP service: POST /execute (an
// execution reported to the control plane), POST /v1/run and
// DELETE /v1/sessions/{id} (one program with limits, sessions),
// POST /v1/judge, the MCP endpoint /mcp, and GET /health, GET /metrics and
// GET /openapi.yaml.
//
// Sessions are the Runner's business (session.Store.Wrap): the server
// maps the store's refusals to statuses (429 for too many sessions, 507
// for a workspace or the sessions' disk over its cap, 404 for a session
// deleted while a call waited, 400 for a bad or unusable session_id), and
// Options.Sessions ends them.
//
// Executions of every endpoint share the running slots (by default one per
// core) and a bounded queue (by default max(64, 16 × slots) waiting
// requests), the MCP tool execute_code included; a request that finds both
// full is refused with 503 and Retry-After before any work is done, and a request once queued is never
// dropped. An /execute request runs to its end even when its client
// leaves, since its result is owed to the control plane; /v1/run and
// /v1/judge stop when their client leaves.
//
// Errors are JSON {"error": {"code", "message", "request_id"}}, with a
// request id on every one (the X-Request-ID the client sent when it is
// safe, else a fresh one, echoed in the response header). A panic in a
// handler is answered 500 with that body; its stack goes to the log only.
//
// With an API token (CODERUNNER_API_TOKEN) every endpoint but /health,
// /metrics and /openapi.yaml, /mcp included, requires "Authorization: Bearer <token>",
// compared in constant time. Those three stay open so that probes and
// scrapers need no secret; they reveal no code, input or output. Several
// tokens (Options.APITokens) may be set, one per client; each owns its
// sessions (session.WithOwner), so the same session_id names a different
// session for each. Serve refuses to run without a token on a listener
// that is not loopback, or with a Reporter.
//
// Every route refuses, with 403, a Host or Origin that is not the
// server's (internal/httpguard: DNS rebinding, cross-site pages), and the
// JSON endpoints a body not sent as application/json, with 415. A body
// must arrive within Options.ReadTimeout (408 and the connection closed
// otherwise), and each write of an answer within Options.WriteTimeout,
// renewed at every write so that a long run is never cut.
//
// Serve runs until its context ends. The cause of the context, an
// *ExitStatus such as ExitSIGTERM, says how: /health turns 503 and new
// executions are refused at once; running and queued /execute executions
// are stopped and reported crashed; pending results get what is left of
// the grace period (Options.ShutdownGrace: 2 s by default, the setting
// server.shutdown_timeout in serve) to reach the control plane, then the
// exited callback is sent, all within the grace period, and the listener
// closes.
package httpapi
