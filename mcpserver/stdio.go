package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLineBytes bounds one incoming message: the largest arguments plus
// the JSON-RPC envelope.
const maxLineBytes = maxArgsBytes + 1<<20

// LineTransport serves one client over newline-delimited JSON-RPC on a
// reader and a writer (stdin and stdout for coderunner mcp). It does what
// the SDK's IOTransport does for a single message per line at a fraction
// of the cost: the SDK decodes each incoming line three times, each with a
// fresh 32 KB buffer, before its own handling decodes the parameters
// again. A batch (a JSON array, allowed before protocol 2025-06-18) is
// handed to the SDK's decoder and answered one response per line.
type LineTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
}

var _ mcp.Transport = (*LineTransport)(nil)

// Connect starts reading; it is called once by the server.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		r:        t.Reader,
		w:        t.Writer,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msgs []jsonrpc.Message
	err  error
}

type lineConn struct {
	r io.ReadCloser
	w io.WriteCloser

	incoming chan readResult
	queue    []jsonrpc.Message

	writeMu sync.Mutex
	buf     []byte

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// readLoop reads lines in its own goroutine, so that Close can unblock a
// Read waiting on a stdin that cannot be interrupted. It decodes each line
// before handing it over, which overlaps decoding with the handling of the
// previous message.
func (c *lineConn) readLoop() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		line, err := readLine(br)
		var res readResult
		switch {
		case err != nil:
			res.err = err
		case len(line) == 0:
			continue
		default:
			res.msgs, res.err = decodeLine(line)
		}
		select {
		case c.incoming <- res:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readLine returns the next line without its end, at most maxLineBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == nil {
		return bytes.TrimSpace(line), nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(bytes.TrimSpace(line)) > 0 && errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	// A line longer than the buffer: collect it.
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(long) > maxLineBytes {
			return nil, fmt.Errorf("a message is longer than %d bytes", maxLineBytes)
		}
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimSpace(long), nil
}

// wireMessage is a JSON-RPC 2.0 message as it arrives.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeLine decodes one line: a message, or a batch of them.
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	if line[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(line, &raws); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
	m, err := decodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// decodeMessage decodes one message as jsonrpc.DecodeMessage does.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected \"2.0\"", w.Version)
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("invalid request: a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		if r.err != nil {
			return nil, r.err
		}
		c.queue = r.msgs[1:]
		return r.msgs[0], nil
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	// One write per message, newline included, so that a reader never
	// sees half a line.
	c.buf = append(append(c.buf[:0], data...), '\n')
	_, err = c.w.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		close(c.closed)
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }
