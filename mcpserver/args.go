package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/coderunner/coderunner/internal/strictjson"
)

// maxArgsBytes bounds the arguments of one call, so that decoding cannot
// take more memory than a judge request may (64 MB) plus room for JSON
// escapes.
const maxArgsBytes = 96 << 20

// decodeArgs decodes a tool's JSON arguments into v, a pointer to a
// struct, refusing unknown arguments. Its errors name the argument and
// what it must be, for the model to correct its call.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) > maxArgsBytes {
		return fmt.Errorf("arguments are %d bytes, more than the %d allowed", len(raw), maxArgsBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return argError(err, raw, v)
	}
	if dec.More() {
		return errors.New("arguments must be one JSON object")
	}
	return nil
}

// argError rewrites a decoding error of raw in the words of the tool's
// schema, naming a value of the wrong type by its path in the arguments
// ("test_cases[2].input").
func argError(err error, raw json.RawMessage, v any) error {
	var te *strictjson.TypeError
	var se *json.SyntaxError
	switch {
	case errors.As(strictjson.Explain(err, raw, v), &te):
		if te.Path == "" {
			return errors.New("arguments must be a JSON object")
		}
		return fmt.Errorf("argument %q must be %s, not %s", te.Path, te.Want, article(te.Value))
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	const unknown = "json: unknown field "
	if msg := err.Error(); strings.HasPrefix(msg, unknown) {
		return fmt.Errorf("unknown argument %s (the arguments are %s)",
			strings.TrimPrefix(msg, unknown), strings.Join(strictjson.Names(v), ", "))
	}
	return fmt.Errorf("invalid arguments: %w", err)
}

// article puts "a"/"an" before the JSON value kind that encoding/json
// reports ("string", "number 1.5", "array", "object").
func article(v string) string {
	if v == "" {
		return "that"
	}
	if strings.ContainsRune("aeiou", rune(v[0])) {
		return "an " + v
	}
	return "a " + v
}
