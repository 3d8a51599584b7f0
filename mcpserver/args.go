package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
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
		return argError(err, v)
	}
	if dec.More() {
		return errors.New("arguments must be one JSON object")
	}
	return nil
}

// argError rewrites a decoding error in the words of the tool's schema.
func argError(err error, v any) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field == "" {
			return errors.New("arguments must be a JSON object")
		}
		return fmt.Errorf("argument %q must be %s, not %s", strictjson.FieldPath(te, v), jsonKind(te.Type), article(te.Value))
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

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
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
