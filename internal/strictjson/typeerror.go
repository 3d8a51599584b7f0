package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// maxValueBytes bounds what a TypeError repeats of the value: encoding/json
// puts a number it cannot store into its error whole, and a client may
// send a megabyte of digits.
const maxValueBytes = 40

// typeError is te as a *TypeError whose path is the value's place in doc.
//
// encoding/json's own path (te.Field) is no path of the document: it has
// no array indices, no map keys, and the Go names of the embedded structs
// it went through, among them those of a type's own UnmarshalJSON
// ("test_cases.plain.input"). The value is found again by walking doc
// along that path with v's type, trying each array element and map value
// in document order: the first whose value is of the JSON type te names
// and does not decode into te.Type is the one.
func typeError(te *json.UnmarshalTypeError, doc []byte, v any) *TypeError {
	e := &TypeError{Want: kind(te.Type), Value: te.Value}
	if len(e.Value) > maxValueBytes {
		e.Value = e.Value[:maxValueBytes] + "…"
	}
	var segs []string
	if te.Field != "" {
		segs = strings.Split(te.Field, ".")
	}
	l := locator{te: te}
	l.got, _, _ = strings.Cut(te.Value, " ")
	if path, ok := l.walk(doc, reflect.TypeOf(v), segs, ""); ok {
		e.Path = path
	} else {
		e.Path = FieldPath(te, v)
	}
	return e
}

type locator struct {
	te  *json.UnmarshalTypeError
	got string // the JSON type of the value te is about
}

// walk looks for the value in doc, a value of type t (nil when the type
// is not known: it belongs to a type decoded by a method of its own), at
// the path segs of encoding/json's words; path is doc's own path.
// Its work is bounded by the size of doc times the depth of the types:
// a value of unknown type is only followed by name.
func (l *locator) walk(doc []byte, t reflect.Type, segs []string, path string) (string, bool) {
	if t != nil {
		t = deref(t)
	}
	if len(segs) == 0 && l.at(doc, t) {
		return path, true
	}
	if t == nil || t.Kind() == reflect.Interface {
		if len(segs) == 0 {
			return "", false
		}
		return l.unseen(doc, t, segs, path)
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		elems, ok := elements(doc)
		if !ok {
			return "", false
		}
		for i, e := range elems {
			if p, ok := l.walk(e, t.Elem(), segs, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	case reflect.Map:
		ms, ok := members(doc)
		if !ok {
			return "", false
		}
		for _, m := range ms {
			if p, ok := l.walk(m.value, t.Elem(), segs, join(path, m.key)); ok {
				return p, true
			}
		}
	case reflect.Struct:
		if len(segs) == 0 {
			return "", false
		}
		fields := fieldsOf(t)
		if _, ok := named(fields, segs[0]); ok {
			return l.key(doc, segs, path, func(k string) (reflect.Type, bool) {
				if name, ft, ok := match(fields, k); ok && name == segs[0] {
					return ft, true
				}
				return nil, false
			})
		}
		if et, ok := embedded(t, segs[0]); ok {
			return l.walk(doc, et, segs[1:], path)
		}
		return l.unseen(doc, t, segs, path)
	}
	return "", false
}

// unseen follows segs[0] when it is not a field of t: t (if known) is
// decoded by a method of its own through types of its own, and the
// segment is a key of the document (an alias the method takes) or the Go
// name of one of those types, left out. A Go name is never last: it is
// that of a struct whose field follows.
func (l *locator) unseen(doc []byte, t reflect.Type, segs []string, path string) (string, bool) {
	if p, ok := l.key(doc, segs, path, func(k string) (reflect.Type, bool) {
		return nil, strings.EqualFold(k, segs[0])
	}); ok || len(segs) == 1 {
		return p, ok
	}
	return l.walk(doc, t, segs[1:], path)
}

// key follows the members of the object doc that field accepts for
// segs[0], in document order, with the type it gives.
func (l *locator) key(doc []byte, segs []string, path string, field func(key string) (reflect.Type, bool)) (string, bool) {
	ms, ok := members(doc)
	if !ok {
		return "", false
	}
	for _, m := range ms {
		ft, ok := field(m.key)
		if !ok {
			continue
		}
		if p, ok := l.walk(m.value, ft, segs[1:], join(path, m.key)); ok {
			return p, true
		}
	}
	return "", false
}

// at reports whether doc, of type t (nil if not known), is the value the
// error is about: of its JSON type, and not one its Go type takes. A type
// with a method of its own may decode through another type, which the
// error then names.
func (l *locator) at(doc []byte, t reflect.Type) bool {
	if jsonType(doc) != l.got {
		return false
	}
	if t != nil && t.Kind() != reflect.Interface && !reflect.PointerTo(t).Implements(jsonUnmarshaler) && t != deref(l.te.Type) {
		return false
	}
	return json.Unmarshal(doc, reflect.New(l.te.Type).Interface()) != nil
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonType is the JSON type of a value as encoding/json names it in its
// errors.
func jsonType(doc []byte) string {
	doc = bytes.TrimLeft(doc, " \t\r\n")
	if len(doc) == 0 {
		return ""
	}
	switch doc[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

type member struct {
	key   string
	value json.RawMessage
}

// members decodes doc as a JSON object: its members in document order;
// ok is false when doc is not an object.
func members(doc []byte) (ms []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var m member
		if err := dec.Decode(&m.value); err != nil {
			return nil, false
		}
		m.key = key
		ms = append(ms, m)
	}
	return ms, true
}

// elements decodes doc as a JSON array; ok is false when it is not one.
func elements(doc []byte) ([]json.RawMessage, bool) {
	var elems []json.RawMessage
	if jsonType(doc) != "array" || json.Unmarshal(doc, &elems) != nil {
		return nil, false
	}
	return elems, true
}

// match finds the field a key names as encoding/json does: the exact name
// first, else one equal but for case.
func match(fields []field, key string) (string, reflect.Type, bool) {
	if t, ok := named(fields, key); ok {
		return key, t, true
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f.name, f.t, true
		}
	}
	return "", nil, false
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// kind names the JSON type a value of Go type t is decoded from: "a
// string", "a boolean", "an integer", "a number", "an array" or "an
// object".
func kind(t reflect.Type) string {
	t = deref(t)
	if pt := reflect.PointerTo(t); pt.Implements(textUnmarshaler) && !pt.Implements(jsonUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
