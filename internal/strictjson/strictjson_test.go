package strictjson

import (
	"encoding/json"
	"errors"
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

type request struct {
	Language string            `json:"language"`
	Limits   limits            `json:"limits"`
	Tests    []testCase        `json:"test_cases"`
	Env      map[string]limits `json:"env"`
	Metadata map[string]any    `json:"metadata"`
	Event    json.RawMessage   `json:"event"`
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
	doc := `{"language":5}`
	err := decode(doc)
	var ue *UnknownFieldError
	var te *json.UnmarshalTypeError
	if errors.As(err, &ue) || !errors.As(err, &te) {
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
