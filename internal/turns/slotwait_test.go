package turns

import (
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// waitForSlot makes the host's Open say Wait until slotFree.
func waitForSlot(h *harness) { h.openErr = &Wait{Notice: "all agent processes busy"} }

// slotFree is the host's grant: Open succeeds again, and the engine is told.
func slotFree(h *harness) {
	h.openErr = nil
	h.note("slot free")
	h.e.Slot().Free()
}

// TestTurnWaitsForAnAgentSlot: a turn whose backend cannot open yet (every
// agent process the host allows runs, maxAgentProcesses) waits unsent with
// a notice in the turn, and is sent when the host frees a slot; a stop
// ends it cancelled, unsent (issue 34 §5).
func TestTurnWaitsForAnAgentSlot(t *testing.T) {
	runRules(t, []rule{
		{id: "waits with a notice instead of failing",
			steps: []step{waitForSlot, mark, start("t1", "hi")},
			want:  []string{"tell turnStarted t1", "open agent", "tell responsePart t1"},
			none:  []string{"send", "tell error", "ended"},
			check: func(t *testing.T, h *harness) {
				if !h.e.Slot().Waiting() || !h.e.Busy() {
					t.Fatalf("WaitsForSlot %v, Busy %v: want both", h.e.Slot().Waiting(), h.e.Busy())
				}
				parts := h.e.State().ActiveTurn.ResponseParts
				if len(parts) != 1 || parts[0].Kind != ahp.PartSystemNotification || parts[0].Content != "all agent processes busy" {
					t.Fatalf("the turn's parts are %+v, want the notice", parts)
				}
			}},
		{id: "sent once a slot is free, and its text starts a part after the notice",
			steps: []step{waitForSlot, start("t1", "hi"), mark, slotFree, say("t1", "hello"), done("t1")},
			want:  []string{"slot free", "open agent", "send agent t1 hi", "tell responsePart t1", "tell turnComplete t1"},
			check: func(t *testing.T, h *harness) {
				if h.e.Slot().Waiting() {
					t.Fatal("still waits after the turn ran")
				}
				parts := h.e.State().Turns[0].ResponseParts
				if len(parts) != 2 || parts[1].Kind != ahp.PartMarkdown {
					t.Fatalf("parts %+v, want the notice then the answer", parts)
				}
			}},
		{id: "a second wait says nothing more",
			steps: []step{waitForSlot, start("t1", "hi"), mark, func(h *harness) { h.e.Slot().Free() }},
			want:  []string{"open agent"},
			none:  []string{"tell responsePart", "send"},
			check: func(t *testing.T, h *harness) {
				if !h.e.Slot().Waiting() {
					t.Fatal("the turn no longer waits")
				}
			}},
		{id: "a stopped waiting turn ends cancelled and is never sent",
			steps: []step{waitForSlot, start("t1", "hi"), mark, stop("t1"), slotFree},
			want:  []string{"tell turnCancelled t1", "ended t1 cancelled", "slot free"},
			none:  []string{"send", "open"},
			check: func(t *testing.T, h *harness) {
				if h.e.Slot().Waiting() || h.e.Busy() {
					t.Fatalf("WaitsForSlot %v, Busy %v after the stop", h.e.Slot().Waiting(), h.e.Busy())
				}
			}},
		{id: "a turn sent behind a waiting one waits behind it",
			steps: []step{waitForSlot, start("t1", "hi"), start("t2", "next"), mark, slotFree, done("t1")},
			want:  []string{"send agent t1 hi", "tell turnComplete t1", "tell turnStarted t2", "send agent t2 next"}},
		{id: "a slot freed while nothing waits starts nothing",
			steps: []step{mark, slotFree},
			none:  []string{"open", "send"}},
	})
}
