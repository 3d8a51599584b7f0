// Package callback signs and verifies the results coderunner POSTs to a
// submission's callback_url.
//
// Each delivery carries the header
//
//	X-Coderunner-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
//
// where the HMAC, keyed with the server's callback secret
// (server.callback_secret), is taken over the timestamp, a dot and the
// raw body: "<t>.<body>". A receiver checks it with VerifySignature over
// the exact bytes it received, before parsing them, and refuses a
// timestamp older (or further ahead) than it tolerates, so that a
// recorded delivery cannot be replayed later. Within that window a
// receiver that must not act twice keeps the submission ids it has seen
// (X-Coderunner-Submission-Id): a delivery is retried until the
// receiver answers 2xx, so the same result may arrive more than once.
//
// The package uses only the standard library, so that a receiver can
// import it alone.
package callback
