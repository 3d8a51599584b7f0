package invoke

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// The markers around the result block a handler wrapper prints on
// standard output. Each is followed on its line by the run's nonce.
const (
	MarkerStart = "===SANDBOX_RESULT==="
	MarkerEnd   = "===SANDBOX_RESULT_END==="
)

// Kinds of failure the wrapper reports in its block.
const (
	kindMissingHandler  = "missing_handler"
	kindNotSerializable = "not_serializable"
	kindException       = "exception"
)

// block is what the wrapper reports between the markers.
type block struct {
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value"`
	Kind  string          `json:"kind"`
	Error string          `json:"error"`
}

// newNonce draws 128 random bits.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// header is what precedes the caller's stdin: the length of the JSON, a
// newline, the JSON.
func header(nonce string, event json.RawMessage) []byte {
	h, _ := json.Marshal(struct {
		Nonce string          `json:"nonce"`
		Event json.RawMessage `json:"event"`
	}{nonce, event})
	return append([]byte(strconv.Itoa(len(h))+"\n"), h...)
}

// extractBlock finds the block tagged with nonce in stdout and returns
// stdout without it. Only the last such block counts: the wrapper writes
// it after the handler returned. A block cut short by the output cap is
// removed and reported as not found. Blocks with another nonce, or none,
// are the program's own text and stay in stdout.
func extractBlock(stdout []byte, nonce string) (clean []byte, b *block) {
	start := []byte(MarkerStart + " " + nonce + "\n")
	i := bytes.LastIndex(stdout, start)
	if i < 0 {
		return stdout, nil
	}
	rest := stdout[i+len(start):]
	end := []byte("\n" + MarkerEnd + " " + nonce + "\n")
	j := bytes.Index(rest, end)
	if j < 0 {
		return stdout[:i:i], nil
	}
	clean = append(stdout[:i:i], rest[j+len(end):]...)
	var got block
	if err := json.Unmarshal(rest[:j], &got); err != nil {
		return clean, nil
	}
	if got.OK && len(got.Value) == 0 {
		got.Value = json.RawMessage("null")
	}
	return clean, &got
}
