package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Call makes a request to the client (a server→client request, such as
// resourceRead) and returns its result. The answer is matched by id; the
// wait ends at CallTimeout, when ctx ends, or at once when the connection
// closes. It must not be called from the connection's read loop (inside
// Handler.Request or Handler.Notification): the answer is read there. A
// request's lane may call it.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	jc := c.jc.Load()
	if jc == nil || c.ctx.Err() != nil {
		return nil, fmt.Errorf("call %s on %s: %w", method, c.id, ErrNotServing)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	// The connection closing ends the wait at once.
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	var res json.RawMessage
	err := jc.Call(ctx, method, params, &res)
	var rpcErr *jsonrpc2.Error
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &rpcErr):
		return nil, &CallError{Code: rpcErr.Code, Message: rpcErr.Message}
	case c.ctx.Err() != nil:
		return nil, fmt.Errorf("call %s on %s: %w", method, c.id, ErrNotServing)
	}
	return nil, fmt.Errorf("call %s on %s: %w", method, c.id, err)
}
