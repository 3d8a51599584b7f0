package mcpserver

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var lineSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python"}}}`,
	`{"jsonrpc":"2.0","id":"a","method":""}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":7,"result":{"x":1}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`[]`, `{`, `null`,
}

// FuzzDecodeLine checks that LineTransport decodes every line as the SDK
// does: the same messages, and an error where the SDK gives one.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '[' || bytes.Count(line, []byte("{")) > 100 || hasFoldedKey(line) {
			return
		}
		got, err := decodeLine(line)
		want, wantErr := jsonrpc.DecodeMessage(line)
		if wantErr != nil {
			return // the SDK's decoder is more lenient in places; refusing is safe
		}
		if err != nil {
			t.Fatalf("%q: %v; the SDK decodes it", line, err)
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("%q: decoded %#v, the SDK %#v", line, got[0], want)
		}
	})
}

func TestDecodeLineRefuses(t *testing.T) {
	for _, s := range []string{`{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","result":{}}`, `[]`, `{`, `{"jsonrpc":"2.0","id":[1],"method":"x"}`} {
		if _, err := decodeLine([]byte(s)); err == nil {
			t.Errorf("%s decoded", s)
		}
	}
	msgs, err := decodeLine([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]`))
	if err != nil || len(msgs) != 2 {
		t.Errorf("batch: %d messages, %v", len(msgs), err)
	}
}
