package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// PermanentError is a delivery the Send function will never make: the
// outbox stops retrying it and removes its stored copy.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as a delivery never to retry.
func Permanent(err error) error { return &PermanentError{Err: err} }

// OutboxOptions configures an Outbox.
type OutboxOptions struct {
	// Dir keeps the bodies not yet delivered, one file {id}.json each; it
	// is created.
	Dir string
	// Send makes one delivery attempt of body; nil error means
	// delivered. An error wrapped with Permanent ends the retries.
	Send func(ctx context.Context, id string, body []byte) error
	// Backoff is the wait before each retry; the last repeats. Empty
	// means DefaultBackoff.
	Backoff []time.Duration
	// MaxItems and MaxBytes bound what waits for delivery (Full). Zero
	// means DefaultMaxSpool and DefaultMaxSpoolBytes.
	MaxItems int
	MaxBytes int64
	// Logger receives the outbox's logs, with IDKey naming the id
	// ("execution_id"); nil discards them.
	Logger *slog.Logger
	IDKey  string
	// Kind names what is delivered in the logs ("result": "result
	// delivered", event result_delivered); empty means "body".
	Kind string
	// OnFailure, when set, logs a failed attempt instead of the outbox.
	OnFailure func(id string, attempt int, err error)
	// OnDone, when set, is called once an id is delivered (err nil) or
	// given up (a PermanentError), after its stored copy is removed. It
	// is not called for what Close leaves stored.
	OnDone func(id string, attempts int, err error)
}

// Outbox delivers bodies by id in the background until each is taken,
// keeping each in a file of its directory until then, so that a body
// outlives the process: Start hands the files an earlier process left to
// delivery again. One body waits per id; a newer one replaces it. The
// delivery is at least once. It is safe for concurrent use.
type Outbox struct {
	dir       string
	send      func(context.Context, string, []byte) error
	backoff   []time.Duration
	maxItems  int
	maxBytes  int64
	log       *slog.Logger
	idKey     string
	kind      string
	onFailure func(string, int, error)
	onDone    func(string, int, error)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pending map[string]*pending
	bytes   int64
	idle    *sync.Cond // signalled when pending shrinks
	closed  bool
}

// pending is a body not yet delivered.
type pending struct {
	body []byte
	// gen counts the bodies given for the id, so that a delivery of an
	// older body does not remove a newer one.
	gen int
}

// NewOutbox checks opts and makes the directory. It starts nothing: call
// Start to re-send what an earlier process left.
func NewOutbox(opts OutboxOptions) (*Outbox, error) {
	if opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("spool directory %q is not an absolute path", opts.Dir)
	}
	if opts.Send == nil {
		return nil, errors.New("outbox: no Send function")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("unable to create the spool directory: %w", err)
	}
	o := &Outbox{
		dir: opts.Dir, send: opts.Send, backoff: opts.Backoff,
		maxItems: opts.MaxItems, maxBytes: opts.MaxBytes,
		log: opts.Logger, idKey: opts.IDKey, kind: opts.Kind, onFailure: opts.OnFailure, onDone: opts.OnDone,
		pending: map[string]*pending{},
	}
	if o.maxItems <= 0 {
		o.maxItems = DefaultMaxSpool
	}
	if o.maxBytes <= 0 {
		o.maxBytes = DefaultMaxSpoolBytes
	}
	if len(o.backoff) == 0 {
		o.backoff = DefaultBackoff
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.idKey == "" {
		o.idKey = "id"
	}
	if o.kind == "" {
		o.kind = "body"
	}
	o.idle = sync.NewCond(&o.mu)
	o.ctx, o.cancel = context.WithCancel(context.Background())
	return o, nil
}

// Start hands every body an earlier process left in the directory to
// delivery, in the background. It returns how many it found.
func (o *Outbox) Start() int {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		o.log.Error("unable to read the spool directory", "event", "spool_error", "error", err)
		return 0
	}
	n := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || !idPattern.MatchString(id) {
			continue
		}
		body, err := readSpool(filepath.Join(o.dir, e.Name()))
		if err != nil || !json.Valid(body) {
			o.log.Error("unable to read a stored body", "event", "spool_error", o.idKey, id, "error", err)
			continue
		}
		n++
		o.enqueue(id, body, false)
	}
	return n
}

// readSpool reads a spool file without following a link planted in its
// place.
func readSpool(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<20))
}

// Put stores body for id and delivers it in the background. It never
// blocks on the network. id must match ^[A-Za-z0-9_-]{1,128}$.
func (o *Outbox) Put(id string, body []byte) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("id %q is not valid", id)
	}
	o.enqueue(id, body, true)
	return nil
}

// enqueue records body for id, stores it when store is set, and starts a
// delivery unless one is running.
func (o *Outbox) enqueue(id string, body []byte, store bool) {
	// The file is written under the lock, so that a delivery finishing
	// now cannot remove it after it was replaced by this newer body.
	o.mu.Lock()
	defer o.mu.Unlock()
	if store {
		if err := o.store(id, body); err != nil {
			// The delivery still goes on from memory.
			o.log.Error("unable to store a body for retry", "event", "spool_error", o.idKey, id, "error", err)
		}
	}
	if o.closed {
		return
	}
	if p, ok := o.pending[id]; ok {
		o.bytes += int64(len(body) - len(p.body))
		p.body = body
		p.gen++
		return
	}
	o.pending[id] = &pending{body: body}
	o.bytes += int64(len(body))
	o.wg.Add(1)
	go o.deliver(id)
}

// store writes {dir}/{id}.json through a rename, so that it is never
// seen half written.
func (o *Outbox) store(id string, body []byte) error {
	tmp, err := os.CreateTemp(o.dir, ".tmp-"+id+"-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(o.dir, id+".json"))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// deliver sends the pending body of id until it is taken, given up, or
// the outbox closes.
func (o *Outbox) deliver(id string) {
	defer o.wg.Done()
	for attempt := 0; ; attempt++ {
		o.mu.Lock()
		p := o.pending[id]
		body, gen := p.body, p.gen
		o.mu.Unlock()

		err := o.send(o.ctx, id, body)
		var perm *PermanentError
		if err == nil || errors.As(err, &perm) {
			o.mu.Lock()
			if p.gen != gen {
				// A newer body came meanwhile: send it too.
				o.mu.Unlock()
				attempt = -1
				continue
			}
			// The stored copy goes before the body stops being pending,
			// so that Flush returning means both.
			if rerr := os.Remove(filepath.Join(o.dir, id+".json")); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				o.log.Error("unable to remove a delivered body", "event", "spool_error", o.idKey, id, "error", rerr)
			}
			o.drop(id)
			o.mu.Unlock()
			if err == nil {
				o.log.Info(o.kind+" delivered", "event", o.kind+"_delivered", o.idKey, id, "attempts", attempt+1)
			} else {
				o.log.Warn(o.kind+" delivery given up", "event", o.kind+"_abandoned", o.idKey, id, "attempts", attempt+1, "error", err)
			}
			if o.onDone != nil {
				o.onDone(id, attempt+1, err)
			}
			return
		}
		if o.onFailure != nil {
			o.onFailure(id, attempt, err)
		} else if o.ctx.Err() == nil {
			o.log.Warn(o.kind+" delivery failed; retrying", "event", o.kind+"_failed", o.idKey, id, "attempt", attempt+1, "error", err)
		}
		if !o.wait(attempt) {
			o.mu.Lock()
			o.drop(id)
			o.mu.Unlock()
			return // closed: the stored file is re-sent at the next start
		}
	}
}

// wait sleeps before retry number attempt+1; false when the outbox
// closed meanwhile.
func (o *Outbox) wait(attempt int) bool {
	return sleep(o.ctx, o.backoff[min(attempt, len(o.backoff)-1)])
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// drop forgets the pending body of id. o.mu is held.
func (o *Outbox) drop(id string) {
	if p, ok := o.pending[id]; ok {
		o.bytes -= int64(len(p.body))
		delete(o.pending, id)
	}
	o.idle.Broadcast()
}

// Spool is the number and size of the bodies not yet delivered.
func (o *Outbox) Spool() (items int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending), o.bytes
}

// Full is true when the bodies not yet delivered reach MaxItems or
// MaxBytes: the caller must not start work that would add more. Bodies
// put all the same are still kept and sent, so the spool holds at most
// the bound plus the work already started.
func (o *Outbox) Full() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending) >= o.maxItems || o.bytes >= o.maxBytes
}

// Flush waits until every body is delivered or ctx ends; undelivered
// bodies stay stored for the next start.
func (o *Outbox) Flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.idle.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.pending) > 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("%d not delivered: %w", len(o.pending), ctx.Err())
		}
		o.idle.Wait()
	}
	return nil
}

// Close stops every retry and waits for the deliveries in flight. What is
// not delivered stays in the directory. Close is safe to call twice.
func (o *Outbox) Close() error {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
	return nil
}
