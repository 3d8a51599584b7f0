package execute

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRunFieldsRequest: Request carries every field a front end decoded
// into the executor's request, but the two each front end checks and
// words itself, so that a field added to RunFields cannot be accepted and
// then dropped.
func TestRunFieldsRequest(t *testing.T) {
	doc := `{"language":"python","code":"x","stdin":"in","timeout":3,"session_id":"s","mode":"interpreter",
		"session_ttl_seconds":60,"files":[{"path":"a.py","content":"y"}],"entry":"a.py",
		"artifacts":{"include_content":true,"max_bytes":10},"args":["a"],"compiler_flags":["-O2"],"env":{"A":"b"}}`
	var f RunFields
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		t.Fatal(err)
	}
	fv := reflect.ValueOf(f)
	for i := range fv.NumField() {
		if fv.Field(i).IsZero() {
			t.Fatalf("the document sets no %s: add it", fv.Type().Field(i).Name)
		}
	}
	limits := ExecutionLimits{TimeLimit: 7, MemoryLimit: 64}
	req := f.Request(limits)
	if req.Limits != limits || req.SessionTTL != 0 {
		t.Errorf("limits %+v, session ttl %v", req.Limits, req.SessionTTL)
	}
	rv := reflect.ValueOf(req)
	for i := range fv.NumField() {
		name := fv.Type().Field(i).Name
		if name == "Timeout" || name == "SessionTTLSeconds" {
			continue // the front end's to check and apply
		}
		got := rv.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("Request has no field %s", name)
			continue
		}
		if !reflect.DeepEqual(got.Interface(), fv.Field(i).Interface()) {
			t.Errorf("%s: %v, want %v", name, got.Interface(), fv.Field(i).Interface())
		}
	}
}
