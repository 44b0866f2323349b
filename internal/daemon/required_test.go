package daemon_test

import (
	"strings"
	"testing"
)

// TestActionMissingRequiredFieldIsRefused (issue 31, AHP: an action's
// required fields): an action a client dispatches without a field AHP
// requires is refused with a rejectionReason naming the field, and changes
// nothing; the same action whole is taken.
func TestActionMissingRequiredFieldIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, chat := e.createSession(a, "ahp-session:/7e9a1d00-0000-4000-8000-000000000001")
	a.Subscribe(chat)
	cases := []struct {
		name   string
		action map[string]any
		field  string
	}{
		{"turnStarted without an origin", map[string]any{"type": "chat/turnStarted", "turnId": "r1",
			"startedAt": "2026-12-05T00:00:00Z", "message": map[string]any{"text": "hi"}}, "message.origin"},
		{"toolCallConfirmed without approved", map[string]any{"type": "chat/toolCallConfirmed", "turnId": "r1",
			"toolCallId": "c1"}, "approved"},
		{"toolCallComplete without turnId", map[string]any{"type": "chat/toolCallComplete", "toolCallId": "c1",
			"result": map[string]any{"success": true}}, "turnId"},
		{"inputCompleted without response", map[string]any{"type": "chat/inputCompleted", "requestId": "q1"}, "response"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := a.AwaitEcho(a.Dispatch(chat, tc.action))
			if env.RejectionReason == "" || !strings.Contains(env.RejectionReason, tc.field+" is required") {
				t.Fatalf("echo %s, want a refusal naming %s", env.Raw, tc.field)
			}
		})
	}
	if cs := chatOf(t, a, chat); len(cs.Turns) != 0 || cs.ActiveTurn != nil {
		t.Fatalf("a refused action changed the chat: %+v", cs)
	}
	// Whole, it is taken.
	if end := sendTurn(t, a, chat, "r2", "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("the whole turnStarted ended %s", end.Raw)
	}
}
