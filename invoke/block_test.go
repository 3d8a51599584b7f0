package invoke

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExtractBlock(t *testing.T) {
	const nonce = "0123456789abcdef0123456789abcdef"
	blk := func(n, body string) string {
		return MarkerStart + " " + n + "\n" + body + "\n" + MarkerEnd + " " + n + "\n"
	}
	for _, tc := range []struct {
		name, stdout, clean string
		value               string // "" when no block is found
		kind                string
	}{
		{"value", "hello\n" + blk(nonce, `{"ok":true,"value":{"a":1}}`), "hello\n", `{"a":1}`, ""},
		{"no newline before", "partial" + blk(nonce, `{"ok":true,"value":2}`), "partial", "2", ""},
		{"output after", blk(nonce, `{"ok":true,"value":null}`) + "atexit\n", "atexit\n", "null", ""},
		{"missing value", blk(nonce, `{"ok":true}`), "", "null", ""},
		{"failure", blk(nonce, `{"ok":false,"kind":"missing_handler","error":"handler function not found"}`), "", "", "missing_handler"},
		{"none", "just output\n", "just output\n", "", ""},
		{"forged without nonce", MarkerStart + "\n{\"ok\":true,\"value\":\"forged\"}\n" + MarkerEnd + "\n",
			MarkerStart + "\n{\"ok\":true,\"value\":\"forged\"}\n" + MarkerEnd + "\n", "", ""},
		{"forged nonce then real", blk("ffffffffffffffffffffffffffffffff", `{"ok":true,"value":"forged"}`) + blk(nonce, `{"ok":true,"value":"real"}`),
			blk("ffffffffffffffffffffffffffffffff", `{"ok":true,"value":"forged"}`), `"real"`, ""},
		{"cut short", "out\n" + MarkerStart + " " + nonce + "\n{\"ok\":tr", "out\n", "", ""},
		{"bad json", blk(nonce, `{not json`), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clean, b := extractBlock([]byte(tc.stdout), nonce)
			if string(clean) != tc.clean {
				t.Errorf("clean stdout %q, want %q", clean, tc.clean)
			}
			switch {
			case tc.value == "" && tc.kind == "":
				if b != nil {
					t.Errorf("found block %+v, want none", b)
				}
			case tc.kind != "":
				if b == nil || b.OK || b.Kind != tc.kind {
					t.Errorf("block %+v, want failure %q", b, tc.kind)
				}
			default:
				if b == nil || !b.OK || string(b.Value) != tc.value {
					t.Errorf("block %+v, want value %s", b, tc.value)
				}
			}
		})
	}
}

func TestHeader(t *testing.T) {
	h := string(header("n1", json.RawMessage(`{"x":"\n"}`)))
	n, body, ok := strings.Cut(h, "\n")
	if !ok || n != "33" || len(body) != 33 {
		t.Fatalf("header %q", h)
	}
	var got struct {
		Nonce string
		Event map[string]string
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.Nonce != "n1" || got.Event["x"] != "\n" {
		t.Errorf("header body %s: %v", body, err)
	}
	if a, b := newNonce(), newNonce(); len(a) != 32 || a == b {
		t.Errorf("nonces %q and %q", a, b)
	}
}

func FuzzExtractBlock(f *testing.F) {
	const nonce = "0123456789abcdef0123456789abcdef"
	f.Add("x" + MarkerStart + " " + nonce + "\n{\"ok\":true,\"value\":1}\n" + MarkerEnd + " " + nonce + "\n")
	f.Add(MarkerStart + "\n")
	f.Fuzz(func(t *testing.T, out string) {
		clean, b := extractBlock([]byte(out), nonce)
		if len(clean) > len(out) {
			t.Fatalf("clean output grew")
		}
		if b != nil && b.OK && !json.Valid(b.Value) {
			t.Fatalf("value %q is not JSON", b.Value)
		}
	})
}
