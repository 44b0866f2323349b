package chat

import "github.com/ahpd/ahpd/internal/ahp"

// persistPending keeps the chat's steering and queued messages in its
// record, so a restart loses none of what waits.
func (c *Chat) persistPending() {
	meta := ParseRecordMeta(c.record.Meta)
	steering := c.state.SteeringMessage
	if samePending(meta.Steering, steering) && samePendingList(meta.Queued, c.state.QueuedMessages) {
		return
	}
	meta.Steering = steering
	meta.Queued = append([]ahp.PendingMessage(nil), c.state.QueuedMessages...)
	c.record.Meta = meta.Raw()
	c.persistRecord()
}

// restorePending puts the kept pending messages back into the state; they
// wait until a client acts or a turn completes, as after a stop.
func (c *Chat) restorePending() {
	meta := ParseRecordMeta(c.record.Meta)
	c.state.SteeringMessage = meta.Steering
	if len(meta.Queued) > 0 {
		c.state.QueuedMessages = meta.Queued
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
