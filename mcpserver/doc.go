// Package mcpserver serves coderunner to AI agents over the Model Context
// Protocol, with the official Go SDK's server: over stdio (coderunner mcp)
// and over streamable HTTP (the /mcp endpoint of coderunner serve).
//
// Three tools:
//
//   - execute_code runs a program (language, code, stdin, timeout,
//     session_id, and optionally memory_limit). The result is the same
//     object /v1/run answers, as structuredContent, and as
//     text a one-line summary followed by the program's output and the same
//     JSON. With a session_id, files written in /workspace stay there for
//     the session's next call. A client that sends a progress token
//     receives the output while the program runs: progress notifications
//     whose message is a chunk of stdout or stderr (at most 8 KiB, whole
//     UTF-8 characters; _meta.stream names the stream) and whose progress
//     is the count of output bytes sent, all before the result.
//   - judge_code compiles once and runs test cases (language, code,
//     test_cases, timeout_ms, total_timeout_ms, memory_limit_mb, compare, subtasks,
//     checker, interactor, files, entry, args, compiler_flags, env, and
//     request_id, which the result echoes);
//     the judge's ExecutionResult, as /v1/judge answers it, is the
//     structured content. A client that
//     sends a progress token receives a notification as each test ends.
//   - list_languages lists the languages with their aliases and whether
//     their toolchain is available here.
//
// Input schemas describe every argument, enumerate the language names and
// bound every limit. Arguments are decoded by this package rather than by
// the SDK's schema validation, so that a bad argument is a tool error
// (isError: true) whose message names the argument and says what is
// allowed, the way an agent can act on; unknown arguments are refused too,
// since they are usually a misspelling, named by their place in the call
// ("test_cases[2].mode") with the names the object there takes. A verdict is not a tool error: a
// program that fails or times out is a successful call whose result says
// so; a request the sandbox refused, or could not run, is.
//
// Cancellation by the client (notifications/cancelled, or the HTTP request
// going away) cancels the call's context, which stops the sandboxed
// program and everything it started.
//
// The transports are this package's own, on the SDK's mcp.Transport
// interface, because the SDK's cost more than the tools: LineTransport for
// stdio, and HTTPHandler (what Handler returns) for streamable HTTP,
// protocol versions 2024-11-05 to 2025-11-25. HTTPHandler decodes a POST
// body once, answers a request with its response as a JSON body (an event
// stream only when the request asks for progress, so that the progress
// comes first), routes each response to its POST by JSON-RPC id and each
// progress notification by its token, and writes from the goroutine that
// produced the message. It takes JSON-RPC batches under the protocol
// versions that have them (before 2025-06-18) and refuses them after;
// GET gets 405, since the server sends nothing outside a call.
//
// Both transports answer a plain execute_code call themselves: a call
// whose parameters are only the tool's name and its arguments, once the
// SDK has answered the session's initialize. They call the same handler
// and write the bytes the SDK's session would (a test sends every kind of
// call both ways and compares), without the SDK's hand-offs between
// goroutines and decoding of the parameters twice more through fresh 32 KB
// buffers: 0.2 ms a call after a sandboxed run. Everything else (other
// tools, a call with _meta such as a progress token, batches over HTTP,
// anything before initialization) goes through the SDK's session; a cancellation
// notification reaches both. Server.Run sets this up for a LineTransport,
// and HTTPHandler for each of its sessions.
package mcpserver
