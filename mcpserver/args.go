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
// schema, naming a value of the wrong type or an unknown argument by its
// path in the arguments ("test_cases[2].input"), and for an unknown one
// the names the object that holds it takes.
func argError(err error, raw json.RawMessage, v any) error {
	var te *strictjson.TypeError
	var uf *strictjson.UnknownFieldError
	var se *json.SyntaxError
	switch explained := strictjson.Explain(err, raw, v); {
	case errors.As(explained, &te):
		if te.Path == "" {
			return errors.New("arguments must be a JSON object")
		}
		return fmt.Errorf("argument %q must be %s, not %s", te.Path, te.Want, article(te.Value))
	case errors.As(explained, &uf):
		return unknownArg(uf)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	return fmt.Errorf("invalid arguments: %w", err)
}

// unknownArg names an argument the tool does not take, and what the
// object it was found in takes: the arguments themselves, or a nested
// object such as a test case ("test_cases[2]"). One found in no object
// the decoder knows is named alone.
func unknownArg(uf *strictjson.UnknownFieldError) error {
	switch {
	case uf.Known == nil:
		return fmt.Errorf("unknown argument %q", uf.Path)
	case len(uf.Known) == 0 && uf.Object == "":
		return fmt.Errorf("unknown argument %q (the tool takes no arguments)", uf.Path)
	case len(uf.Known) == 0:
		return fmt.Errorf("unknown argument %q (%s takes no fields)", uf.Path, uf.Object)
	case uf.Object == "":
		return fmt.Errorf("unknown argument %q (the arguments are %s)", uf.Path, strings.Join(uf.Known, ", "))
	}
	return fmt.Errorf("unknown argument %q (the fields of %s are %s)", uf.Path, uf.Object, strings.Join(uf.Known, ", "))
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
