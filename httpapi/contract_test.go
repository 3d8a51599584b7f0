package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
)

// spec is the parsed OpenAPI document.
var spec = func() map[string]any {
	var m map[string]any
	if err := yaml.Unmarshal(OpenAPI, &m); err != nil {
		panic(err)
	}
	return m
}()

// resolve follows a local $ref ("#/components/...").
func resolve(node any) any {
	for {
		m, ok := node.(map[string]any)
		if !ok {
			return node
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return node
		}
		var cur any = spec
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		node = cur
	}
}

// checkContract fails the test when the answer rec to method path is not
// one the document describes: an undocumented status, a missing header,
// or a JSON body that does not match the schema.
func checkContract(t *testing.T, method, path string, rec *httptest.ResponseRecorder) {
	t.Helper()
	item, ok := specPath(path)
	if !ok {
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: undocumented path answered %d", method, path, rec.Code)
		}
		checkSchema(t, "404", rec.Body.Bytes(), spec["components"].(map[string]any)["schemas"].(map[string]any)["Error"])
		return
	}
	op, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		// A method the path does not have: every path documents 405.
		// Its answer is that of the path's first operation in name
		// order but HEAD's, whose answers have no body.
		for _, m := range slices.Sorted(maps.Keys(item)) {
			if o, isOp := item[m].(map[string]any)["responses"]; isOp && m != "head" && o != nil {
				op = item[m].(map[string]any)
				break
			}
		}
	}
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(rec.Code)]
	if !ok {
		t.Errorf("%s %s: status %d is not documented", method, path, rec.Code)
		return
	}
	r := resolve(resp).(map[string]any)
	if hs, ok := r["headers"].(map[string]any); ok {
		for h := range hs {
			if rec.Header().Get(h) == "" {
				t.Errorf("%s %s %d: header %s is documented but missing", method, path, rec.Code, h)
			}
		}
	}
	content, ok := r["content"].(map[string]any)
	if !ok {
		if rec.Body.Len() != 0 {
			t.Errorf("%s %s %d: documented without a body, got %q", method, path, rec.Code, rec.Body)
		}
		return
	}
	if c, ok := content["application/json"].(map[string]any); ok && !documentedOther(content, rec.Header().Get("Content-Type")) {
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s %d: Content-Type %q, want JSON", method, path, rec.Code, ct)
		}
		checkSchema(t, fmt.Sprintf("%s %s %d", method, path, rec.Code), rec.Body.Bytes(), c["schema"])
		return
	}
	if got := rec.Header().Get("Content-Type"); !documentedOther(content, got) {
		t.Errorf("%s %s %d: Content-Type %q is not documented", method, path, rec.Code, got)
	}
}

// documentedOther reports whether the answer's Content-Type got is one
// of content's types other than JSON (an event stream beside it).
func documentedOther(content map[string]any, got string) bool {
	for ct := range content {
		if ct != "application/json" && strings.HasPrefix(got, ct) {
			return true
		}
	}
	return false
}

// specPath finds the document's path item for a request path, matching
// templated segments ("{id}") with any one segment, and a file's path
// ("{path}", the last) with the rest of the path.
func specPath(path string) (map[string]any, bool) {
	path, _, _ = strings.Cut(path, "?")
	// A literal path wins over a template that matches it too
	// (/v1/judge/batch over /v1/judge/{id}), as in the server's mux.
	if item, ok := spec["paths"].(map[string]any)[path]; ok {
		return item.(map[string]any), true
	}
	for p, item := range spec["paths"].(map[string]any) {
		re := regexp.QuoteMeta(p)
		re = strings.Replace(re, `\{path\}`, ".+", 1)
		re = "^" + regexp.MustCompile(`\\\{[^/]+\\\}`).ReplaceAllString(re, "[^/]+") + "$"
		if regexp.MustCompile(re).MatchString(path) {
			return item.(map[string]any), true
		}
	}
	return nil, false
}

func checkSchema(t *testing.T, what string, body []byte, schema any) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("%s: body is not JSON: %v: %q", what, err, body)
		return
	}
	for _, e := range validate(v, schema, "$") {
		t.Errorf("%s: %s", what, e)
	}
}

// validate checks v against the subset of JSON Schema the document uses:
// type (one or a list), enum, properties, required, additionalProperties
// false, items, pattern, allOf, oneOf and $ref.
func validate(v, schema any, at string) []string {
	s, ok := resolve(schema).(map[string]any)
	if !ok {
		return nil
	}
	var errs []string
	for _, sub := range asList(s["allOf"]) {
		sub := resolve(sub).(map[string]any)
		// allOf members are checked without their closedness, which the
		// combining schema decides.
		open := map[string]any{}
		for k, val := range sub {
			if k != "additionalProperties" {
				open[k] = val
			}
		}
		errs = append(errs, validate(v, open, at)...)
	}
	if alts := asList(s["oneOf"]); len(alts) > 0 {
		n := 0
		for _, a := range alts {
			if len(validate(v, a, at)) == 0 {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, fmt.Sprintf("%s: %s matches %d of the oneOf schemas, not one", at, short(v), n))
		}
	}
	if t, ok := s["type"]; ok {
		types := asList(t)
		if !slices.ContainsFunc(types, func(want any) bool { return hasType(v, want.(string)) }) {
			return append(errs, fmt.Sprintf("%s: %s is not of type %v", at, short(v), types))
		}
	}
	if e, ok := s["enum"]; ok && !slices.ContainsFunc(asList(e), func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
		errs = append(errs, fmt.Sprintf("%s: %s is not one of %v", at, short(v), e))
	}
	if p, ok := s["pattern"].(string); ok {
		if str, ok := v.(string); ok && !regexp.MustCompile(p).MatchString(str) {
			errs = append(errs, fmt.Sprintf("%s: %q does not match %s", at, str, p))
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := val[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: required field %s is missing", at, r))
			}
		}
		closed := s["additionalProperties"] == false
		for k, fv := range val {
			ps, ok := props[k]
			if !ok {
				if closed {
					errs = append(errs, fmt.Sprintf("%s: field %s is not documented", at, k))
				}
				continue
			}
			errs = append(errs, validate(fv, ps, at+"."+k)...)
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, x := range val {
				errs = append(errs, validate(x, items, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}

func asList(x any) []any {
	switch l := x.(type) {
	case nil:
		return nil
	case []any:
		return l
	}
	return []any{x}
}

func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// TestOpenAPIDocument checks the document itself: it parses, says 3.1,
// and documents every route the server has.
func TestOpenAPIDocument(t *testing.T) {
	if v, _ := spec["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Errorf("openapi version %q", v)
	}
	paths := spec["paths"].(map[string]any)
	for _, p := range []string{"/execute", "/v1/run", "/v1/run/ws", "/v1/judge", "/v1/judge/{id}", "/v1/sessions/{id}", "/mcp", "/health", "/metrics", "/openapi.yaml"} {
		if _, ok := paths[p]; !ok {
			t.Errorf("%s is not documented", p)
		}
	}
	// Every $ref resolves.
	var walk func(any)
	walk = func(n any) {
		switch x := n.(type) {
		case map[string]any:
			if _, ok := x["$ref"]; ok {
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("unresolvable $ref %v", x["$ref"])
						}
					}()
					if resolve(x) == nil {
						t.Errorf("unresolvable $ref %v", x["$ref"])
					}
				}()
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(spec)
}

func TestValidatorCatchesMismatches(t *testing.T) {
	schema := map[string]any{"$ref": "#/components/schemas/Error"}
	for _, tc := range []struct {
		body string
		bad  bool
	}{
		{`{"error":{"code":"bad_request","message":"m","request_id":"r"}}`, false},
		{`{"error":{"code":"bad_request","message":"m"}}`, true},
		{`{"error":{"code":"nope","message":"m","request_id":"r"}}`, true},
		{`{"error":{"code":"bad_request","message":1,"request_id":"r"}}`, true},
		{`{"error":{"code":"bad_request","message":"m","request_id":"r","stack":"x"}}`, true},
	} {
		var v any
		_ = json.Unmarshal([]byte(tc.body), &v)
		if errs := validate(v, schema, "$"); (len(errs) > 0) != tc.bad {
			t.Errorf("%s: errors %v, want bad=%v", tc.body, errs, tc.bad)
		}
	}
}

// TestRequestSchemasMatchDecoders: each request schema of the document
// refuses other properties, as the server does, and lists exactly the
// fields the server decodes (the aliases it accepts among them), so that
// a field added to one is added to the other.
func TestRequestSchemasMatchDecoders(t *testing.T) {
	schemas := spec["components"].(map[string]any)["schemas"].(map[string]any)
	sub := func(s map[string]any, path ...string) map[string]any {
		for _, p := range path {
			s = s["properties"].(map[string]any)[p].(map[string]any)
			if items, ok := s["items"].(map[string]any); ok {
				s = items
			}
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		schema  map[string]any
		decoded any
	}{
		{"ExecuteRequest", sub(schemas["ExecuteRequest"].(map[string]any)), invoke.Request{}},
		{"RunRequest", sub(schemas["RunRequest"].(map[string]any)), runRequest{}},
		{"RunRequest.limits", sub(schemas["RunRequest"].(map[string]any), "limits"), execute.ExecutionLimits{}},
		{"JudgeRequest", sub(schemas["JudgeRequest"].(map[string]any)), judgeRequest{}},
		{"JudgeRequest.test_cases", sub(schemas["JudgeRequest"].(map[string]any), "test_cases"), judge.TestCase{}},
		{"JudgeRequest.subtasks", sub(schemas["JudgeRequest"].(map[string]any), "subtasks"), judge.Subtask{}},
		{"JudgeTool", sub(schemas["JudgeTool"].(map[string]any)), judge.Tool{}},
	} {
		if tc.schema["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is not false", tc.name)
		}
		var documented []string
		for k := range tc.schema["properties"].(map[string]any) {
			documented = append(documented, k)
		}
		slices.Sort(documented)
		want := strictjson.Names(tc.decoded)
		if !slices.Equal(documented, want) {
			t.Errorf("%s documents %v; the server decodes %v", tc.name, documented, want)
		}
	}
}
