package chat

import (
	"maps"

	"github.com/ahpd/ahpd/internal/ahp"
)

// persistPending keeps the chat's steering and queued messages in its
// record, so a restart loses none of what waits.
func (c *Chat) persistPending() {
	meta := ParseRecordMeta(c.record.Meta)
	steering := c.state.SteeringMessage
	senders := c.pendingSenders()
	if samePending(meta.Steering, steering) && samePendingList(meta.Queued, c.state.QueuedMessages) && maps.Equal(meta.PendingSenders, senders) {
		return
	}
	meta.Steering = steering
	meta.Queued = append([]ahp.PendingMessage(nil), c.state.QueuedMessages...)
	meta.PendingSenders = senders
	c.record.Meta = meta.Raw()
	c.persistRecord()
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
