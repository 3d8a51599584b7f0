// Package strictjson decodes request bodies that refuse fields they do
// not know, naming the refused field by its path in the document
// ("test_cases[2].expected_answer"). A client written for another system
// sends fields this one does not have; ignoring them would give it a
// wrong answer without a warning. A value of the wrong type is named by
// its path too, in the document's words rather than Go's.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// UnknownFieldError is a field of the document that its type does not
// have.
type UnknownFieldError struct {
	// Path is the field's place in the document: object keys joined by
	// dots, array elements as [i] ("limits.memory", "test_cases[0].out").
	Path string
	// Object is the place of the object that holds the field, as Path
	// ("test_cases[0]"; "" for the document itself).
	Object string
	// Known lists, sorted, the names the object that holds the field
	// takes (as Names does), for a message that tells the client what
	// it may write there. Nil when the field's place was not found (it
	// sits in a type decoded by a method of its own under another
	// name): Path is then the name alone and Object means nothing.
	Known []string
}

func (e *UnknownFieldError) Error() string {
	return e.Path + ": unknown field"
}

// NewDecoder returns a decoder of r that refuses unknown fields. Pass its
// errors through Explain with the document's bytes to name the field's
// path; when the bytes are not at hand the error still names the field.
func NewDecoder(r io.Reader) *json.Decoder {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec
}

// Unmarshal is json.Unmarshal refusing unknown fields, for the
// UnmarshalJSON methods of request types (which the decoder's own
// setting does not reach). Its error names the field; the caller that
// holds the whole document gives it its path with Explain.
func Unmarshal(data []byte, v any) error {
	return NewDecoder(bytes.NewReader(data)).Decode(v)
}

// unknownName is the field name in encoding/json's error for an unknown
// field, `json: unknown field "NAME"`.
func unknownName(err error) (string, bool) {
	const prefix = `json: unknown field `
	for ; err != nil; err = errors.Unwrap(err) {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			name, err := strconv.Unquote(rest)
			return name, err == nil
		}
	}
	return "", false
}

// TypeError is a value of the document that is not of the JSON type its
// field takes.
type TypeError struct {
	// Path is the value's place in the document, as UnknownFieldError's
	// ("test_cases[2].input"); empty when it is the document itself.
	Path string
	// Want is what the field takes: "a string", "a boolean", "an
	// integer", "a number", "an array" or "an object".
	Want string
	// Value is what the document has, in encoding/json's words
	// ("string", "number", "number 1.5", "bool", "array", "object"),
	// a number cut short.
	Value string
}

func (e *TypeError) Error() string {
	msg := "must be " + e.Want + ", not a JSON " + e.Value
	if e.Path == "" {
		return msg
	}
	return e.Path + ": " + msg
}

// Explain turns a decoding error of doc into v (a pointer to the type
// decoded) into an error that names the field by its path in the
// document: an *UnknownFieldError for a field v does not have, a
// *TypeError for a value of the wrong type. Any other error is returned
// as it is. An unknown field whose path cannot be found (it sits in a
// type decoded by a method of its own under another name) is named alone.
func Explain(err error, doc []byte, v any) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return typeError(te, doc, v)
	}
	name, ok := unknownName(err)
	if !ok {
		return err
	}
	if e := find(doc, reflect.TypeOf(v), name, ""); e != nil {
		return e
	}
	return &UnknownFieldError{Path: join("", name)}
}

// FieldPath is the path of the field a type error is about, in the
// document's words, for v (a pointer to the type decoded). encoding/json
// names the field by the JSON names on its way, but also puts in the Go
// names of the embedded structs it went through ("RunFields.timeout"),
// which no document has: those are left out. Empty when the error names
// no field.
func FieldPath(err *json.UnmarshalTypeError, v any) string {
	if err.Field == "" {
		return ""
	}
	t := reflect.TypeOf(v)
	var path []string
	for _, seg := range strings.Split(err.Field, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			path, t = append(path, seg), nil
			continue
		}
		if ft, ok := named(fieldsOf(t), seg); ok {
			path, t = append(path, seg), ft
			continue
		}
		if et, ok := embedded(t, seg); ok {
			t = et
			continue
		}
		path, t = append(path, seg), nil
	}
	return strings.Join(path, ".")
}

// named finds the field of that exact JSON name, as encoding/json names
// it in an error.
func named(fields []field, name string) (reflect.Type, bool) {
	for _, f := range fields {
		if f.name == name {
			return f.t, true
		}
	}
	return nil, false
}

// embedded finds the struct embedded in t under the Go name name whose
// fields encoding/json promotes (one with no JSON name of its own).
func embedded(t reflect.Type, name string) (reflect.Type, bool) {
	f, ok := t.FieldByName(name)
	if !ok || !f.Anonymous || len(f.Index) != 1 {
		return nil, false
	}
	if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" {
		return nil, false
	}
	return f.Type, true
}

// find returns the first key called name (in document order of the
// objects, keys sorted within one) that the type t does not have, nil
// if there is none.
func find(doc []byte, t reflect.Type, name, path string) *UnknownFieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, keys, ok := object(doc)
		if !ok {
			return nil
		}
		fields, aliases := fieldsOf(t), aliasesOf(t)
		for _, k := range keys {
			ft, known := lookup(fields, k)
			if !known {
				if k == name && !slices.ContainsFunc(aliases, func(a string) bool { return strings.EqualFold(a, k) }) {
					return &UnknownFieldError{Path: join(path, k), Object: path, Known: names(t)}
				}
				continue
			}
			if e := find(obj[k], ft, name, join(path, k)); e != nil {
				return e
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		var elems []json.RawMessage
		if json.Unmarshal(doc, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if e := find(e, t.Elem(), name, fmt.Sprintf("%s[%d]", path, i)); e != nil {
				return e
			}
		}
	case reflect.Map:
		obj, keys, ok := object(doc)
		if !ok {
			return nil
		}
		for _, k := range keys {
			if e := find(obj[k], t.Elem(), name, join(path, k)); e != nil {
				return e
			}
		}
	}
	return nil
}

// object decodes doc as a JSON object: its members and their keys in
// sorted order; ok is false when doc is not an object.
func object(doc []byte) (obj map[string]json.RawMessage, keys []string, ok bool) {
	if json.Unmarshal(doc, &obj) != nil || obj == nil {
		return nil, nil, false
	}
	return obj, slices.Sorted(maps.Keys(obj)), true
}

// join appends an object key to a path. A key that is not a plain name
// goes in brackets, JSON-quoted with its spaces escaped, so that a path
// is one word whatever the client sent: x["a b"] is x["a\u0020b"].
func join(path, key string) string {
	if !plain(key) {
		q, _ := json.Marshal(key)
		return path + "[" + strings.ReplaceAll(string(q), " ", `\u0020`) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// plain reports whether key is a name that needs no quoting in a path.
func plain(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if r != '_' && r != '-' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

type field struct {
	name string
	t    reflect.Type
}

// fieldsOf lists the JSON fields of a struct type as encoding/json sees
// them, the fields of embedded structs promoted.
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, fieldsOf(et)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, field{name, f.Type})
	}
	return out
}

// lookup finds a key among fields as encoding/json does (see match).
func lookup(fields []field, key string) (reflect.Type, bool) {
	_, t, ok := match(fields, key)
	return t, ok
}

// Aliased is a struct type whose own UnmarshalJSON takes names besides
// its fields' (another name for one of them), which Names and
// UnknownFieldError.Known then list too.
type Aliased interface {
	JSONAliases() []string
}

// Names lists the JSON field names of the struct v points to (or is), as
// a decoder of it accepts them (an Aliased type's aliases among them):
// for checks that a document describing a request (an OpenAPI schema, a
// tool schema) names the same fields.
func Names(v any) []string {
	return names(reflect.TypeOf(v))
}

func names(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := aliasesOf(t)
	for _, f := range fieldsOf(t) {
		out = append(out, f.name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// aliasesOf is what an Aliased t (or *t) gives, a new slice.
func aliasesOf(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	a, ok := reflect.New(t).Interface().(Aliased)
	if !ok {
		return []string{}
	}
	return slices.Clone(a.JSONAliases())
}
