package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

type limits struct {
	Time   float64 `json:"time_limit"`
	Memory int     `json:"memory_limit,omitempty"`
}

type base struct {
	ID string `json:"id"`
}

type testCase struct {
	base
	Input    string `json:"input"`
	Expected string `json:"expected_output"`
	Skipped  string `json:"-"`
}

// UnmarshalJSON accepts "expected" as another name, as request types
// with aliases do.
func (tc *testCase) UnmarshalJSON(data []byte) error {
	type plain testCase
	var aux struct {
		plain
		Alias *string `json:"expected"`
	}
	if err := Unmarshal(data, &aux); err != nil {
		return err
	}
	*tc = testCase(aux.plain)
	if aux.Alias != nil {
		tc.Expected = *aux.Alias
	}
	return nil
}

// JSONAliases names the alias UnmarshalJSON takes.
func (*testCase) JSONAliases() []string { return []string{"expected"} }

type request struct {
	Language string            `json:"language"`
	Limits   limits            `json:"limits"`
	Tests    []testCase        `json:"test_cases"`
	Env      map[string]limits `json:"env"`
	Metadata map[string]any    `json:"metadata"`
	Event    json.RawMessage   `json:"event"`
	Matrix   [][]int           `json:"matrix"`
	// Updates sorts after test_cases, whose alias is no field of limits.
	Updates []limits `json:"updates"`
}

func decode(doc string) error {
	var r request
	err := NewDecoder(strings.NewReader(doc)).Decode(&r)
	if err != nil {
		return Explain(err, []byte(doc), &r)
	}
	return nil
}

func TestUnknownFieldsNamedByPath(t *testing.T) {
	for _, tc := range []struct{ doc, path string }{
		{`{"language":"c","files":[]}`, "files"},
		{`{"limits":{"time_limit":1,"memory":5}}`, "limits.memory"},
		{`{"test_cases":[{"input":"1"},{"input":"2","expected_answer":"x"}]}`, "test_cases[1].expected_answer"},
		{`{"test_cases":[{"id":"a","Skipped":"x"}]}`, "test_cases[0].Skipped"},
		{`{"env":{"A":{"time_limit":1},"B":{"cpu":2}}}`, "env.B.cpu"},
		// A key that is not a plain name is quoted, its spaces escaped.
		{`{"limits":{"a b: c":1}}`, `limits["a\u0020b:\u0020c"]`},
		{`{"env":{"x.y":{"q":1}}}`, `env["x.y"].q`},
		// The alias is known to the test case's own decoding; the
		// unknown key after it is the one named.
		{`{"test_cases":[{"expected":"1","checker":"x"}]}`, "test_cases[0].checker"},
	} {
		err := decode(tc.doc)
		var ue *UnknownFieldError
		if !errors.As(err, &ue) || ue.Path != tc.path {
			t.Errorf("%s: %v, want the path %s", tc.doc, err, tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: the message %q does not name %s", tc.doc, err, tc.path)
		}
	}
}

// TestUnknownFieldsTellTheirObject: an unknown field comes with the
// place of the object that holds it and the names that object takes, at
// the top of the document and beneath it, an alias of a type's own
// decoding among them, so that a message can say what to write instead.
func TestUnknownFieldsTellTheirObject(t *testing.T) {
	lim := []string{"memory_limit", "time_limit"}
	for _, tc := range []struct {
		doc, path, object string
		known             []string
	}{
		{`{"language":"c","lang":"c"}`, "lang", "", Names(request{})},
		{`{"limits":{"time_limit":1,"memory":5}}`, "limits.memory", "limits", lim},
		{`{"test_cases":[{},{"checker":1}]}`, "test_cases[1].checker", "test_cases[1]", []string{"expected", "expected_output", "id", "input"}},
		{`{"env":{"A":{},"B":{"cpu":2}}}`, "env.B.cpu", "env.B", lim},
		{`{"env":{"x.y":{"q":1}}}`, `env["x.y"].q`, `env["x.y"]`, lim},
		// The alias a test case takes is no unknown field of the test
		// case, whatever its case, when limits refuses it.
		{`{"test_cases":[{"expected":"1"}],"updates":[{"expected":2}]}`, "updates[0].expected", "updates[0]", lim},
		{`{"test_cases":[{"Expected":"1"}],"updates":[{"Expected":2}]}`, "updates[0].Expected", "updates[0]", lim},
	} {
		err := decode(tc.doc)
		var ue *UnknownFieldError
		if !errors.As(err, &ue) {
			t.Errorf("%s: %v, want an unknown field", tc.doc, err)
			continue
		}
		if ue.Path != tc.path || ue.Object != tc.object || !slices.Equal(ue.Known, tc.known) {
			t.Errorf("%s: path %q, object %q, known %v; want %q, %q, %v", tc.doc, ue.Path, ue.Object, ue.Known, tc.path, tc.object, tc.known)
		}
	}
	if got := Names(testCase{}); !slices.Contains(got, "expected") || !slices.Contains(got, "id") {
		t.Errorf("Names(testCase) = %v, without the alias or the embedded field", got)
	}
	// A field whose place is not found is named alone, with no list.
	err := Explain(errors.New(`json: unknown field "ghost"`), []byte(`{}`), &request{})
	var ue *UnknownFieldError
	if !errors.As(err, &ue) || ue.Path != "ghost" || ue.Known != nil {
		t.Errorf("not found: %#v", err)
	}
}

func TestKnownFieldsAccepted(t *testing.T) {
	for _, doc := range []string{
		`{"language":"c","limits":{"time_limit":1,"memory_limit":2}}`,
		`{"test_cases":[{"id":"a","input":"1","expected":"2"}]}`,
		// Free-form values are not checked.
		`{"metadata":{"anything":{"at":["all"]}},"event":{"x":1}}`,
		// encoding/json matches names regardless of case.
		`{"Language":"c"}`,
	} {
		if err := decode(doc); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

func TestOtherErrorsUnchanged(t *testing.T) {
	doc := `{"language":"c",`
	err := decode(doc)
	var ue *UnknownFieldError
	var te *TypeError
	if errors.As(err, &ue) || errors.As(err, &te) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%s: %v", doc, err)
	}
}

// shared is embedded in the request types below, as fields several
// requests share are.
type shared struct {
	Code   string   `json:"code"`
	Limits limits   `json:"limits"`
	Files  []limits `json:"files"`
}

type tagged struct {
	Name string `json:"name"`
}

// Owner is exported: encoding/json cannot allocate an embedded pointer to
// an unexported struct.
type Owner struct {
	Key string `json:"key"`
}

type withEmbedded struct {
	shared
	*Owner
	tagged `json:"tagged"`
	Memory int `json:"memory_limit"`
}

// TestFieldPathLeavesOutEmbeddedStructs: a type error in a field of an
// embedded struct is named by the document's path, without the struct's
// Go name that encoding/json puts in it.
func TestFieldPathLeavesOutEmbeddedStructs(t *testing.T) {
	for _, tc := range []struct {
		doc, path string
		goName    bool // encoding/json's own path has a Go name in it
	}{
		{`{"code":5}`, "code", true},
		{`{"limits":{"time_limit":"x"}}`, "limits.time_limit", true},
		{`{"files":[{"time_limit":1},{"memory_limit":"x"}]}`, "files.memory_limit", true},
		// Through an embedded pointer.
		{`{"key":5}`, "key", true},
		// An embedded struct with a JSON name of its own is a field.
		{`{"tagged":{"name":5}}`, "tagged.name", false},
		{`{"memory_limit":"x"}`, "memory_limit", false},
	} {
		var v withEmbedded
		err := json.Unmarshal([]byte(tc.doc), &v)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%s: %v, want a type error", tc.doc, err)
		}
		if got := FieldPath(te, &v); got != tc.path {
			t.Errorf("%s: %q (encoding/json's %q), want %q", tc.doc, got, te.Field, tc.path)
		}
		if tc.goName == (te.Field == tc.path) {
			t.Errorf("%s: encoding/json names %q: the case does not test what it says", tc.doc, te.Field)
		}
	}
	if got := FieldPath(&json.UnmarshalTypeError{}, &withEmbedded{}); got != "" {
		t.Errorf("no field: %q", got)
	}
	// A path the type does not have is kept as it is.
	if got := FieldPath(&json.UnmarshalTypeError{Field: "a.shared.b"}, &withEmbedded{}); got != "a.shared.b" {
		t.Errorf("unknown path: %q", got)
	}
}

// TestTypeErrorsNamedByPath: a value of the wrong type is named by its
// path in the document, array elements by their index, and never by the
// Go names encoding/json puts in its own path (the embedded structs, the
// types a method of a type decodes through, the type itself).
func TestTypeErrorsNamedByPath(t *testing.T) {
	for _, tc := range []struct{ doc, msg string }{
		{`{"language":5}`, "language: must be a string, not a JSON number"},
		{`{"limits":{"time_limit":"x"}}`, "limits.time_limit: must be a number, not a JSON string"},
		{`{"limits":{"memory_limit":1.5}}`, "limits.memory_limit: must be an integer, not a JSON number 1.5"},
		// Through the test case's own decoding, whose aux struct embeds a
		// type of its own.
		{`{"test_cases":[{"input":"1"},{"input":"2"},{"input":3}]}`, "test_cases[2].input: must be a string, not a JSON number"},
		{`{"test_cases":[{"id":"a"},{"id":false}]}`, "test_cases[1].id: must be a string, not a JSON bool"},
		{`{"test_cases":[{"expected":"1"},{"expected":{}}]}`, "test_cases[1].expected: must be a string, not a JSON object"},
		{`{"test_cases":[{},"x"]}`, "test_cases[1]: must be an object, not a JSON string"},
		{`{"test_cases":{"input":"1"}}`, "test_cases: must be an array, not a JSON object"},
		// An element whose value has the right type is passed over.
		{`{"test_cases":[{"input":[]},{"input":3}]}`, "test_cases[0].input: must be a string, not a JSON array"},
		{`{"matrix":[[1],[2,"x"]]}`, "matrix[1][1]: must be an integer, not a JSON string"},
		{`{"env":{"A":{"time_limit":1},"B":{"time_limit":[]}}}`, "env.B.time_limit: must be a number, not a JSON array"},
		{`{"env":{"x y":{"time_limit":true}}}`, `env["x\u0020y"].time_limit: must be a number, not a JSON bool`},
		// The document's own spelling of a key.
		{`{"Limits":{"Time_Limit":"x"}}`, "Limits.Time_Limit: must be a number, not a JSON string"},
		{`[1]`, "must be an object, not a JSON array"},
	} {
		err := decode(tc.doc)
		var te *TypeError
		if !errors.As(err, &te) || err.Error() != tc.msg {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.msg)
		}
	}

	// A type decoded at the top: a tests file.
	doc := []byte(`[{"input":"a"},{"input":1}]`)
	var tests []testCase
	if err := Explain(json.Unmarshal(doc, &tests), doc, &tests); err == nil || err.Error() != "[1].input: must be a string, not a JSON number" {
		t.Errorf("%s: %v", doc, err)
	}
	doc = []byte(`["a"]`)
	if err := Explain(json.Unmarshal(doc, &tests), doc, &tests); err == nil || err.Error() != "[0]: must be an object, not a JSON string" {
		t.Errorf("%s: %v", doc, err)
	}

	// Through an embedded struct.
	doc = []byte(`{"files":[{"time_limit":1},{"memory_limit":"x"}]}`)
	var v withEmbedded
	if err := Explain(json.Unmarshal(doc, &v), doc, &v); err == nil || err.Error() != "files[1].memory_limit: must be an integer, not a JSON string" {
		t.Errorf("%s: %v", doc, err)
	}
}

// TestTypeErrorKeepsMessagesShort: encoding/json puts a number it cannot
// store into its error whole; a client's megabyte of digits is not
// echoed back.
func TestTypeErrorKeepsMessagesShort(t *testing.T) {
	doc := `{"limits":{"memory_limit":1` + strings.Repeat("0", 1<<20) + `.5}}`
	err := decode(doc)
	var te *TypeError
	if !errors.As(err, &te) || te.Path != "limits.memory_limit" || len(err.Error()) > 200 ||
		!strings.HasPrefix(err.Error(), "limits.memory_limit: must be an integer, not a JSON number 100") {
		t.Errorf("%.300v", err)
	}
}

// FuzzExplain: any document is decoded or refused with an error, never a
// panic; a type error is named by a path of the document, never by the
// Go names encoding/json's own path has.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{
		`{"test_cases":[{"input":"1"},{"input":3}]}`, `{"test_cases":[{"expected":2}]}`, `{"test_cases":["x"]}`,
		`{"env":{"A":{"time_limit":"x"}}}`, `{"matrix":[[1],["x"]]}`, `{"limits":{"memory_limit":1e400}}`, `[1]`, `{"a":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := decode(string(doc))
		var te *TypeError
		if !errors.As(err, &te) {
			return
		}
		for _, goName := range []string{"plain", "base", "Alias"} {
			if strings.Contains(te.Path, goName) && !bytes.Contains(bytes.ToLower(doc), bytes.ToLower([]byte(goName))) {
				t.Fatalf("%s: %v names %s", doc, err, goName)
			}
		}
	})
}
