package execute

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A cell's result carries value (null included) and display; a program's
// carries neither; both read back as they were.
func TestResultJSONInterpreter(t *testing.T) {
	v := "42"
	for _, tc := range []struct {
		res        Result
		has, lacks []string
	}{
		{Result{Status: StatusSuccess}, nil, []string{`"value"`, `"display"`, `"restarted"`}},
		{Result{Status: StatusSuccess, Interpreter: true}, []string{`"value":null`, `"display":[]`}, []string{`"restarted"`}},
		{Result{Status: StatusSuccess, Interpreter: true, Value: &v, Restarted: true,
			Display: []Display{{MIME: "image/png", Data: "AA=="}}},
			[]string{`"value":"42"`, `"display":[{"mime":"image/png","data":"AA=="}]`, `"restarted":true`}, nil},
	} {
		b, err := json.Marshal(tc.res)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.has {
			if !strings.Contains(string(b), s) {
				t.Errorf("%s lacks %s", b, s)
			}
		}
		for _, s := range tc.lacks {
			if strings.Contains(string(b), s) {
				t.Errorf("%s has %s", b, s)
			}
		}
		var back Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want := tc.res
		if want.Interpreter && want.Display == nil {
			want.Display = []Display{}
		}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("read back %+v, want %+v", back, want)
		}
	}
}
