package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// CallTimeout bounds a request to a client when the caller's context has
// no earlier deadline.
const CallTimeout = 30 * time.Second

// ErrNotServing: the connection has not started, or has closed.
var ErrNotServing = errors.New("the connection is not serving")

// CallError is a client's error answer to a request.
type CallError struct {
	Code    int64
	Message string
}

func (e *CallError) Error() string { return fmt.Sprintf("client answered %d: %s", e.Code, e.Message) }

// calls are the requests a connection made to its client and waits on, by
// id. An answer to no waiting call (late, after its caller gave up, or
// made up) is dropped with a debug line.
type calls struct {
	mu      sync.Mutex
	next    uint64
	waiting map[jsonrpc2.ID]chan *jsonrpc2.Response
}

// open registers a new call and returns its id and where its answer goes.
func (cs *calls) open() (jsonrpc2.ID, chan *jsonrpc2.Response) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.waiting == nil {
		cs.waiting = make(map[jsonrpc2.ID]chan *jsonrpc2.Response)
	}
	cs.next++
	id := jsonrpc2.ID{Num: cs.next}
	// Buffered: the read loop hands the answer over without waiting.
	ch := make(chan *jsonrpc2.Response, 1)
	cs.waiting[id] = ch
	return id, ch
}

// forget drops the call id, answered or given up on.
func (cs *calls) forget(id jsonrpc2.ID) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.waiting, id)
}

// take removes and returns the channel the call id waits on.
func (cs *calls) take(id jsonrpc2.ID) (chan *jsonrpc2.Response, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ch, ok := cs.waiting[id]
	delete(cs.waiting, id)
	return ch, ok
}

// answer hands a client's response to the Call that waits for it; it runs
// on the read loop and never blocks.
func (c *Conn) answer(env *envelope) {
	var ch chan *jsonrpc2.Response
	ok := false
	if !env.nullID {
		ch, ok = c.calls.take(env.resp.ID)
	}
	if !ok {
		c.log.Debug("answer to no waiting request dropped", "id", env.resp.ID.String(), "nullID", env.nullID)
		return
	}
	ch <- &env.resp
}

// Call makes a request to the client (a server→client request, such as
// resourceRead) and returns its result. The answer is matched by id; the
// wait ends at CallTimeout, when ctx ends, or at once when the connection
// closes. It must not be called from the connection's read loop (inside
// Handler.Request or Handler.Notification): the answer is read there. A
// request's lane may call it.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if c.ctx.Err() != nil {
		return nil, fmt.Errorf("call %s on %s: %w", method, c.id, ErrNotServing)
	}
	req := &jsonrpc2.Request{Method: method}
	if err := req.SetParams(params); err != nil {
		return nil, fmt.Errorf("call %s on %s: encode params: %w", method, c.id, err)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	id, answer := c.calls.open()
	defer c.calls.forget(id)
	req.ID = id
	frame, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("call %s on %s: encode request: %w", method, c.id, err)
	}
	if err := c.enqueue(frame, true); err != nil {
		return nil, fmt.Errorf("call %s on %s: %w (%v)", method, c.id, ErrNotServing, err)
	}
	select {
	case resp := <-answer:
		if resp.Error != nil {
			return nil, &CallError{Code: resp.Error.Code, Message: resp.Error.Message}
		}
		if resp.Result == nil {
			return json.RawMessage("null"), nil
		}
		return *resp.Result, nil
	case <-c.ctx.Done():
		return nil, fmt.Errorf("call %s on %s: %w", method, c.id, ErrNotServing)
	case <-ctx.Done():
		if c.ctx.Err() != nil {
			return nil, fmt.Errorf("call %s on %s: %w", method, c.id, ErrNotServing)
		}
		return nil, fmt.Errorf("call %s on %s: %w", method, c.id, ctx.Err())
	}
}
