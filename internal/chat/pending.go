package chat

import (
	"maps"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/turns"
)

// persistPending commits the chat's steering and queued messages, and the
// turns sent behind the running one, so a restart loses none of what waits.
func (du *durable) persistPending() {
	if du.pendingChanged() {
		du.commit("pending messages", du.recordOp())
	}
}

// pendingChanged brings the record's copy of what waits, derived from the
// turn engine, up to date and reports whether it changed.
func (du *durable) pendingChanged() bool {
	c := du.c
	meta := c.meta.of(c.record.Meta)
	st := c.st()
	senders, waiting := c.eng.Waiting()
	behind := make([]BehindStart, 0, len(waiting))
	for _, b := range waiting {
		behind = append(behind, BehindStart{Action: b.Action, Origin: b.Origin, Sender: b.Sender})
	}
	if len(behind) == 0 {
		behind = nil
	}
	if samePending(meta.Steering, st.SteeringMessage) && samePendingList(meta.Queued, st.QueuedMessages) && maps.Equal(meta.PendingSenders, senders) && sameBehind(meta.Behind, behind) {
		return false
	}
	meta.Steering = st.SteeringMessage
	meta.Queued = append([]ahp.PendingMessage(nil), st.QueuedMessages...)
	meta.PendingSenders = senders
	meta.Behind = behind
	c.record.Meta = meta.Raw()
	return true
}

// restorePending puts the kept pending messages back into the state; they
// wait until a client acts or a turn completes, as after a stop.
func (du *durable) restorePending() {
	c := du.c
	meta := ParseRecordMeta(c.record.Meta)
	st := c.st()
	st.SteeringMessage = meta.Steering
	if len(meta.Queued) > 0 {
		st.QueuedMessages = meta.Queued
	}
	behind := make([]turns.Behind, 0, len(meta.Behind))
	for _, b := range meta.Behind {
		// Said once the turn in front of them ends; the connection that
		// sent them is gone, so only who sent them is kept.
		behind = append(behind, turns.Behind{Action: b.Action, Origin: b.Origin, Sender: b.Sender,
			Client: Client{ID: originID(b.Origin), Sender: b.Sender}})
	}
	c.eng.Restore(meta.PendingSenders, behind)
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
	return turns.WithSender(m, sender)
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
