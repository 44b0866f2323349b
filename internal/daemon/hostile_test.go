package daemon_test

import (
	"fmt"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestHostileActions: every client-dispatchable chat and session action,
// sent bare, with unknown ids or with fields of the wrong type, while a
// turn runs and while none does, is taken or refused without hurting the
// daemon: the connection stays up, the chat still works, and every
// client's state agrees with a fresh snapshot afterwards.
func TestHostileActions(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/b0571e00-0000-4000-8000-000000000001")
	a.Subscribe(def)
	sendTurn(t, a, def, "t0", "a turn to aim at")

	variants := func(typ string) []map[string]any {
		return []map[string]any{
			{"type": typ},
			{"type": typ, "turnId": "nope", "toolCallId": "nope", "id": "nope", "kind": "steering", "requestId": "nope", "questionId": "nope", "directory": "relative/dir"},
			{"type": typ, "turnId": "t0", "toolCallId": "t0-tool-1", "id": "", "kind": "queued", "message": map[string]any{"text": ""}},
			{"type": typ, "turnId": 7, "message": "not a message", "order": "nope", "draft": 3, "isRead": "yes", "title": 5},
			{"type": typ, "turnId": "t-active", "kind": "bogus", "order": []any{nil, 1, "x"}, "result": map[string]any{"success": "maybe"}},
		}
	}
	var chatTypes, sessionTypes []string
	for _, typ := range ahp.KnownActionTypes() {
		if !ahp.IsClientDispatchable(typ) {
			continue
		}
		switch {
		case len(typ) > 5 && typ[:5] == "chat/":
			chatTypes = append(chatTypes, typ)
		case len(typ) > 8 && typ[:8] == "session/":
			sessionTypes = append(sessionTypes, typ)
		}
	}
	fire := func(phase string) {
		for _, typ := range chatTypes {
			if typ == "chat/turnStarted" || typ == "chat/truncated" {
				continue // a valid start or rewind changes the chat on purpose; covered elsewhere
			}
			for _, v := range variants(typ) {
				a.Dispatch(def, v)
			}
		}
		for _, typ := range sessionTypes {
			for _, v := range variants(typ) {
				a.Dispatch(sess, v)
			}
		}
		a.MustCall("ping", map[string]any{"channel": ahp.RootURI})
		t.Logf("%s: fired %d chat and %d session action types", phase, len(chatTypes), len(sessionTypes))
	}
	fire("idle")
	a.Dispatch(def, turnStarted("t-active", "[hold] hold on"))
	a.AwaitAction(def, "chat/responsePart")
	fire("running")
	// The chat still works: stop what runs (if the hostile stop missed it)
	// and run one more turn.
	a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t-active"})
	awaitEnd(t, a, def, "t-active")
	for i := range 3 {
		a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/draftChanged"}))
		end := sendTurn(t, a, def, fmt.Sprintf("after-%d", i), "still answers")
		if end.Type() != "chat/turnComplete" {
			// A hostile queued message may run first; what matters is
			// that turns still end.
			t.Logf("after-%d ended %s", i, end.Type())
		}
	}
	// Hostile pending messages may still run: take every one back, stop
	// what runs, until the chat is quiet.
	b := e.client("b")
	for i := 0; ; i++ {
		cs := chatOf(t, b, def)
		if cs.ActiveTurn == nil && cs.SteeringMessage == nil && len(cs.QueuedMessages) == 0 {
			break
		}
		if i > 50 {
			t.Fatalf("the chat never quietens: %+v", cs)
		}
		for _, q := range cs.QueuedMessages {
			a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "queued", "id": q.ID}))
		}
		if s := cs.SteeringMessage; s != nil {
			a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "steering", "id": s.ID}))
		}
		if at := cs.ActiveTurn; at != nil {
			a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": at.ID})
			awaitEnd(t, a, def, at.ID)
		}
	}
	if cs1, cs2 := canon(t, chatOf(t, a, def)), canon(t, chatOf(t, b, def)); cs1 != cs2 {
		t.Fatalf("clients disagree:\n%s\n%s", cs1, cs2)
	}
	sendTurn(t, b, def, "last", "the end")
}
