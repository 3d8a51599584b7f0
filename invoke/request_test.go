package invoke

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  string
		field string // "" when the request is valid
		class error
		check func(t *testing.T, r Request)
	}{
		{"minimal", `{"execution_id":"e1","code":"def handler(e): return 1","language":"python"}`, "", nil,
			func(t *testing.T, r Request) {
				if r.Timeout != DefaultTimeout || r.Mode != ModeHandler || r.Language != "python" || r.Event != nil {
					t.Errorf("defaults not applied: %+v", r)
				}
			}},
		{"all fields", `{"execution_id":"A_b-9","code":"x","language":"JS","timeout":3600,"stdin":"in","event":{"a":[1]},"mode":"script"}`, "", nil,
			func(t *testing.T, r Request) {
				if r.Language != "javascript" || r.Timeout != 3600 || r.Stdin != "in" || string(r.Event) != `{"a":[1]}` || r.Mode != ModeScript {
					t.Errorf("decoded %+v", r)
				}
			}},
		{"shell alias", `{"execution_id":"e","code":"echo","language":"shell"}`, "", nil,
			func(t *testing.T, r Request) {
				if r.Language != "bash" || r.usesHandler() {
					t.Errorf("shell must be a script: %+v", r)
				}
			}},
		{"unknown field", `{"execution_id":"e","code":"x","language":"py","extra":true}`, "extra", ErrInvalidRequest, nil},
		{"another system's field", `{"execution_id":"e","source_code":"x","language":"py"}`, "source_code", ErrInvalidRequest, nil},
		{"null event", `{"execution_id":"e","code":"x","language":"py","event":null}`, "", nil, nil},
		{"empty body", ``, "body", ErrInvalidRequest, nil},
		{"not an object", `[1,2]`, "body", ErrInvalidRequest, nil},
		{"malformed", `{"execution_id":`, "body", ErrInvalidRequest, nil},
		{"trailing data", `{"execution_id":"e","code":"x","language":"py"} {}`, "body", ErrInvalidRequest, nil},
		{"missing id", `{"code":"x","language":"py"}`, "execution_id", ErrInvalidRequest, nil},
		{"id with slash", `{"execution_id":"../x","code":"x","language":"py"}`, "execution_id", ErrInvalidRequest, nil},
		{"id too long", `{"execution_id":"` + strings.Repeat("a", 129) + `","code":"x","language":"py"}`, "execution_id", ErrInvalidRequest, nil},
		{"id not string", `{"execution_id":5,"code":"x","language":"py"}`, "execution_id", ErrInvalidRequest, nil},
		{"missing code", `{"execution_id":"e","language":"py"}`, "code", ErrInvalidRequest, nil},
		{"blank code", `{"execution_id":"e","code":"  ","language":"py"}`, "code", ErrInvalidRequest, nil},
		{"huge code", `{"execution_id":"e","code":"` + strings.Repeat("a", MaxCodeBytes+1) + `","language":"py"}`, "code", ErrTooLarge, nil},
		{"missing language", `{"execution_id":"e","code":"x"}`, "language", ErrInvalidRequest, nil},
		{"bad language", `{"execution_id":"e","code":"x","language":"cobol"}`, "language", ErrInvalidRequest, nil},
		{"compiled language", `{"execution_id":"e","code":"x","language":"c"}`, "language", ErrInvalidRequest, nil},
		{"timeout zero", `{"execution_id":"e","code":"x","language":"py","timeout":0}`, "timeout", ErrInvalidRequest, nil},
		{"timeout high", `{"execution_id":"e","code":"x","language":"py","timeout":3601}`, "timeout", ErrInvalidRequest, nil},
		{"timeout fraction", `{"execution_id":"e","code":"x","language":"py","timeout":1.5}`, "timeout", ErrInvalidRequest, nil},
		{"timeout string", `{"execution_id":"e","code":"x","language":"py","timeout":"soon"}`, "timeout", ErrInvalidRequest, nil},
		{"event array", `{"execution_id":"e","code":"x","language":"py","event":[1]}`, "event", ErrInvalidRequest, nil},
		{"event string", `{"execution_id":"e","code":"x","language":"py","event":"x"}`, "event", ErrInvalidRequest, nil},
		{"bad mode", `{"execution_id":"e","code":"x","language":"py","mode":"lambda"}`, "mode", ErrInvalidRequest, nil},
		{"huge stdin", `{"execution_id":"e","code":"x","language":"py","stdin":"` + strings.Repeat("a", MaxStdinBytes+1) + `"}`, "stdin", ErrTooLarge, nil},
		{"huge body", `{"execution_id":"e","code":"x","language":"py","pad":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, "body", ErrTooLarge, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := DecodeRequest(strings.NewReader(tc.body))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tc.check != nil {
					tc.check(t, req)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, tc.class) {
				t.Fatalf("err %v, want a %v naming %q", err, tc.class, tc.field)
			}
			if !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("message %q does not start with the field", err)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"execution_id":"e1","code":"def handler(e): return 1","language":"python"}`,
		`{"execution_id":"e","code":"x","language":"sh","timeout":5,"event":{"k":"v"},"mode":"script"}`,
		`{"execution_id":"e","code":"x","language":"py","timeout":1e3}`,
		`{}`, `null`, `[`, `{"event":{}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := DecodeRequest(strings.NewReader(body))
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" || (!errors.Is(err, ErrInvalidRequest) && !errors.Is(err, ErrTooLarge)) {
				t.Fatalf("error %v is not a classified FieldError", err)
			}
			return
		}
		// An accepted request always satisfies every rule.
		switch {
		case !ValidExecutionID(req.ExecutionID):
			t.Errorf("accepted execution_id %q", req.ExecutionID)
		case strings.TrimSpace(req.Code) == "" || len(req.Code) > MaxCodeBytes:
			t.Errorf("accepted code of %d bytes", len(req.Code))
		case req.Timeout < MinTimeout || req.Timeout > MaxTimeout:
			t.Errorf("accepted timeout %d", req.Timeout)
		case req.Language != "python" && req.Language != "python3" && req.Language != "javascript" && req.Language != "bash":
			t.Errorf("accepted language %q", req.Language)
		case req.Mode != ModeHandler && req.Mode != ModeScript:
			t.Errorf("accepted mode %q", req.Mode)
		case req.Event != nil && req.Event[0] != '{':
			t.Errorf("accepted event %s", req.Event)
		}
	})
}
