package chat

import (
	"maps"

	"github.com/ahpd/ahpd/internal/ahp"
)

// persistPending commits the chat's steering and queued messages, and the
// turns sent behind the running one, so a restart loses none of what waits.
func (c *Chat) persistPending() {
	if c.pendingChanged() {
		c.commit("pending messages", c.recordOp())
	}
}

// pendingChanged brings the record's copy of what waits up to date and
// reports whether it changed.
func (c *Chat) pendingChanged() bool {
	meta := ParseRecordMeta(c.record.Meta)
	steering := c.state.SteeringMessage
	senders := c.pendingSenders()
	behind := c.behindStarts()
	if samePending(meta.Steering, steering) && samePendingList(meta.Queued, c.state.QueuedMessages) && maps.Equal(meta.PendingSenders, senders) && sameBehind(meta.Behind, behind) {
		return false
	}
	meta.Steering = steering
	meta.Queued = append([]ahp.PendingMessage(nil), c.state.QueuedMessages...)
	meta.PendingSenders = senders
	meta.Behind = behind
	c.record.Meta = meta.Raw()
	return true
}

// pendingSenders are the known senders of the messages that wait now.
func (c *Chat) pendingSenders() map[string]string {
	e := c.engine()
	var out map[string]string
	keep := func(id string) {
		if s, ok := e.senders[id]; ok {
			if out == nil {
				out = make(map[string]string)
			}
			out[id] = s
		}
	}
	if c.state.SteeringMessage != nil {
		keep(c.state.SteeringMessage.ID)
	}
	for _, q := range c.state.QueuedMessages {
		keep(q.ID)
	}
	return out
}

// restorePending puts the kept pending messages back into the state; they
// wait until a client acts or a turn completes, as after a stop.
func (c *Chat) restorePending() {
	meta := ParseRecordMeta(c.record.Meta)
	c.state.SteeringMessage = meta.Steering
	if len(meta.Queued) > 0 {
		c.state.QueuedMessages = meta.Queued
	}
	if len(meta.PendingSenders) > 0 {
		c.engine().senders = maps.Clone(meta.PendingSenders)
	}
	for _, b := range meta.Behind {
		// Said once the turn in front of them ends; the connection that
		// sent them is gone, so only who sent them is kept.
		c.engine().behind = append(c.engine().behind, heldStart{cl: Client{ID: originID(b.Origin), Sender: b.Sender}, origin: b.Origin, a: b.Action})
	}
}

func samePending(a, b *ahp.PendingMessage) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID && sameMessage(a.Message, b.Message)
}

func samePendingList(a, b []ahp.PendingMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !samePending(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// withSenderMeta puts a stored turn's sender back into its message's _meta
// when the stored body lost it (C-TURN-08).
func withSenderMeta(m ahp.Message, sender string) ahp.Message {
	if s, _ := m.Meta[SenderMetaKey].(string); s == sender {
		return m
	}
	return withSender(m, sender)
}

func (c *Chat) behindStarts() []BehindStart {
	var out []BehindStart
	for _, h := range c.engine().behind {
		if h.stop != nil {
			continue // already stopped: said and ended when its turn comes
		}
		out = append(out, BehindStart{Action: h.a, Origin: h.origin, Sender: h.cl.Sender})
	}
	return out
}

func sameBehind(a, b []BehindStart) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Action.TurnID != b[i].Action.TurnID || a[i].Sender != b[i].Sender {
			return false
		}
	}
	return true
}

func originID(o *ahp.ActionOrigin) string {
	if o == nil {
		return ""
	}
	return o.ClientID
}
