package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/coderunner/coderunner/internal/strictjson"
)

// MaxRequestBytes is the largest JSON request DecodeRequest reads. It leaves
// room for MaxCodeBytes of code and MaxTestDataBytes of test data, escaped.
const MaxRequestBytes = 64 << 20

// DecodeRequest reads one JSON ExecutionRequest from r.
//
// It never reads more than MaxRequestBytes (+1 to detect the excess), so the
// memory it allocates is bounded by that; callers that face the network
// should still pass a reader limited to what they accept (for example
// http.MaxBytesReader) so that they can answer 413 early. A field the
// request does not have, here or in a nested object, is refused with its
// path ("test_cases[2].checker: unknown field"): a client written for
// another system would otherwise be judged on what it did not ask for. A
// value of the wrong type is refused naming it the same way
// ("test_cases[2].input: must be a string, not a JSON number").
// Only "metadata" is free-form. Trailing data after the object is an
// error. The request is not validated: Judge.Execute does that, so that a
// refusal is still an ExecutionResult.
//
// Errors wrap ErrRequestTooLarge or ErrInvalidRequest.
func DecodeRequest(r io.Reader) (ExecutionRequest, error) {
	return decodeRequest(r, MaxRequestBytes)
}

// decodeRequest is DecodeRequest with the size limit as a parameter, so
// that tests need not feed it 64 MiB.
func decodeRequest(r io.Reader, limit int64) (ExecutionRequest, error) {
	doc, err := io.ReadAll(&io.LimitedReader{R: r, N: limit + 1})
	if int64(len(doc)) > limit {
		return ExecutionRequest{}, fmt.Errorf("%w: more than %d bytes", ErrRequestTooLarge, limit)
	}
	if err != nil {
		return ExecutionRequest{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	dec := strictjson.NewDecoder(bytes.NewReader(doc))
	var req ExecutionRequest
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return ExecutionRequest{}, fmt.Errorf("%w: empty body", ErrInvalidRequest)
		}
		return ExecutionRequest{}, fmt.Errorf("%w: %w", ErrInvalidRequest, strictjson.Explain(err, doc, &req))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ExecutionRequest{}, fmt.Errorf("%w: unexpected data after the request object", ErrInvalidRequest)
	}
	return req, nil
}

// JSONAliases names the other name UnmarshalJSON takes, for the
// messages and the checks that list a test case's fields.
func (TestCase) JSONAliases() []string { return []string{"expected"} }

// UnmarshalJSON decodes a test case, accepting "expected" for
// "expected_output". Both may be given only when they are equal: a client
// that sends two different answers has a bug worth reporting.
func (tc *TestCase) UnmarshalJSON(data []byte) error {
	type plain TestCase
	var aux struct {
		plain
		Expected *string `json:"expected"`
	}
	if err := strictjson.Unmarshal(data, &aux); err != nil {
		return err
	}
	if aux.Expected != nil {
		var probe struct {
			ExpectedOutput *string `json:"expected_output"`
		}
		// The first Unmarshal succeeded, so this one cannot fail.
		_ = json.Unmarshal(data, &probe)
		if probe.ExpectedOutput != nil && *probe.ExpectedOutput != *aux.Expected {
			return fmt.Errorf("test case %q: expected and expected_output differ", aux.ID)
		}
		aux.ExpectedOutput = *aux.Expected
	}
	*tc = TestCase(aux.plain)
	return nil
}
