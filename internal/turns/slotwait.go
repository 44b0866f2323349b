package turns

import (
	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// Wait is what Host.Open returns when the turn's backend cannot open yet:
// every agent process the host allows runs (maxAgentProcesses). The turn
// does not fail: it waits unsent, Notice said in it as a
// systemNotification part (with Meta as its _meta, for a client to tell
// it from others without reading it), until the host calls Slot().Free
// (or a stop ends it, unsent).
type Wait struct {
	Notice string
	Meta   map[string]any
}

func (w *Wait) Error() string { return w.Notice }

// SlotWait is the running turn's wait for the host to open its backend
// (Host.Open said Wait): like a turn waiting unsent for its backend to
// end the one in front of it, with the host, not the backend, saying
// when it may go.
type SlotWait struct{ e *Engine }

// Slot is the running turn's wait for its backend to open.
func (e *Engine) Slot() SlotWait { return SlotWait{e} }

// begin keeps the running turn's prompt unsent until the host has a
// backend for it, and says why in the turn, once.
func (w SlotWait) begin(t *Active, turn agent.Turn, why *Wait) {
	e := w.e
	e.unsent = &turn
	t.WaitsForSlot = true
	if t.slotNoticed {
		return
	}
	t.slotNoticed = true
	t.lastKind = ahp.PartSystemNotification
	e.Apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.SystemNotificationPart(why.Notice, why.Meta)}, nil)
}

// Waiting reports whether the running turn waits for the host to open
// its backend.
func (w SlotWait) Waiting() bool {
	e := w.e
	t := e.active
	return t != nil && t.WaitsForSlot && !t.Sent && e.unsent != nil && e.unsent.ID == t.ID
}

// Free: the host can open the backend the waiting turn needs now; the
// turn is sent (Open is asked again). Nothing happens when no turn waits.
func (w SlotWait) Free() {
	if !w.Waiting() {
		return
	}
	e := w.e
	t, turn := e.active, *e.unsent
	e.unsent = nil
	t.WaitsForSlot = false
	e.send(t, turn)
}
