// Package controlplane reports the /execute service's life to its control
// plane: each execution's result, heartbeats while
// it runs, the container's readiness and its exit.
//
// Every call is a POST with "Authorization: Bearer <token>". A result is
// retried after 1 s, 2 s, 4 s, then every 10 s until the control plane
// takes it (2xx, or 409 when it already has it); a 401 is logged as an
// authentication failure and retried like any other failure, since the
// token may be rotated.
//
// No result is lost. It is written to ResultsDir/{execution_id}.json
// before the first delivery attempt, not once that attempt has failed: a
// process killed between the end of a run and a failed
// first attempt would otherwise lose it. The file is removed once the
// result is delivered; files left by an earlier process are re-sent by
// Start. The price is at-least-once delivery: a process killed after a
// delivery and before the removal sends the result again at its next
// start, so the control plane must take a result it already has (by
// execution id) without harm. The file is renamed into place, never
// written in place, so a kill leaves either the whole result or none; it
// is not fsynced, since the page cache outlives the process, which is the
// failure this guards against.
//
// The storing and retrying is Outbox's, which other deliveries that must
// not be lost (the signed callbacks of asynchronous judge submissions)
// use too, each with its own directory and send function.
//
// The token is read from the environment by the caller, sent only in the
// Authorization header, and never logged or put in an error.
package controlplane
