package host

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
)

// Delivery coalescing (subscribe's delivery.maxLatencyMs, issue 37): a
// connection that accepts some latency on a channel may get consecutive
// streaming deltas of one part merged into one envelope. The merged
// envelope carries the serverSeq of the last delta it holds, and any other
// action the connection is sent (client.Deliver, DeliverAction) first
// sends what is held, so the connection still reads action envelopes in
// strictly increasing serverSeq, and a reconnect from the merged envelope's
// serverSeq replays exactly what follows it. Replies (a subscribe
// snapshot's serverSeq among them) and the log channel's notifications
// (logs.go) do not wait for what is held. What the client folds is the
// same state an unmerged stream gives: the reducer appends a delta's
// content, and the merged content is the deltas' contents in order.
const (
	// maxCoalesceLatency bounds what a client may ask for: a delta is never
	// held longer, whatever it accepts.
	maxCoalesceLatency = time.Second
	// maxHeldContent bounds the content held for one merged delta; past
	// it the merged envelope is sent at once.
	maxHeldContent = 64 << 10
)

// heldDelta is the deltas of one part held for a connection: the lone
// first delta's own envelope until a second merges into it.
type heldDelta struct {
	channel, kind, turn, part string
	content                   strings.Builder
	seq                       int64
	lone                      json.RawMessage
}

// mergeableDelta reports whether a is a streaming delta whose content may
// merge with the next one of the same part: a markdown or reasoning delta
// with no _meta of its own.
func mergeableDelta(a ahp.Action) (kind, turn, part, content string, ok bool) {
	// Actions travel as values (ahp/actions.go), never as pointers.
	switch d := a.(type) {
	case ahp.ChatDelta:
		return d.ActionType(), d.TurnID, d.PartID, d.Content, len(d.Meta) == 0
	case ahp.ChatReasoning:
		return d.ActionType(), d.TurnID, d.PartID, d.Content, len(d.Meta) == 0
	}
	return "", "", "", "", false
}

// envelope is what the held deltas are sent as.
func (h *heldDelta) envelope() json.RawMessage {
	if h.lone != nil {
		return h.lone
	}
	var a ahp.Action
	if h.kind == (ahp.ChatReasoning{}).ActionType() {
		a = ahp.ChatReasoning{TurnID: h.turn, PartID: h.part, Content: h.content.String()}
	} else {
		a = ahp.ChatDelta{TurnID: h.turn, PartID: h.part, Content: h.content.String()}
	}
	return bus.Envelope(h.channel, a, h.seq)
}

// setLatency records how long deltas on channel may wait for this
// connection (0: none). It is set before the subscription, so the first
// deltas after the snapshot may merge too.
func (c *client) setLatency(channel string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		if _, ok := c.latency[channel]; ok {
			delete(c.latency, channel)
			if c.held != nil && c.held.channel == channel {
				c.flushLocked()
			}
		}
		c.coalescing.Store(len(c.latency) > 0)
		return
	}
	if c.latency == nil {
		c.latency = make(map[string]time.Duration)
	}
	c.latency[channel] = min(d, maxCoalesceLatency)
	c.coalescing.Store(true)
}

// DeliverAction is the bus's delivery of one action (bus.ActionSubscriber).
func (c *client) DeliverAction(channel string, a ahp.Action, seq int64, raw json.RawMessage, frame []byte, fromClient bool) {
	if !c.coalescing.Load() {
		_ = c.conn.NotifyFrame(frame)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	wait := c.latency[channel]
	kind, turn, part, content, ok := mergeableDelta(a)
	if wait <= 0 || !ok || fromClient {
		c.flushLocked()
		_ = c.conn.NotifyFrame(frame)
		return
	}
	if h := c.held; h != nil && h.channel == channel && h.kind == kind && h.turn == turn && h.part == part {
		if h.lone != nil {
			h.lone = nil // merged from now on: built when sent
		}
		h.content.WriteString(content)
		h.seq = seq
		if h.content.Len() >= maxHeldContent {
			c.flushLocked()
		}
		return
	}
	c.flushLocked()
	h := &heldDelta{channel: channel, kind: kind, turn: turn, part: part, seq: seq, lone: raw}
	h.content.WriteString(content)
	c.held = h
	if c.flush == nil {
		c.flush = time.AfterFunc(wait, c.flushHeld)
	} else {
		c.flush.Reset(wait)
	}
}

// flushHeld sends what is held when its latency is up.
func (c *client) flushHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
}

// flushLocked sends the held deltas, if any, before whatever comes next.
// c.mu is held.
func (c *client) flushLocked() {
	h := c.held
	if h == nil {
		return
	}
	c.held = nil
	_ = c.conn.NotifyRaw("action", h.envelope())
}

// stopCoalescing drops what is held and stops the flush timer: the
// connection is gone, and its timer would otherwise fire on it once more.
func (c *client) stopCoalescing() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = nil
	if c.flush != nil {
		c.flush.Stop()
	}
	c.latency = nil
	c.coalescing.Store(false)
}
