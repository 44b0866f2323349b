package daemon_test

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TestClaudeCommands: once the CLI has run, a / in a Claude chat offers the
// slash commands the CLI declared (C-CMD-15).
func TestClaudeCommands(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	def, _ := ce.session(a, "ahp-session:/c0dec0de-0000-4000-8000-000000000001")
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t1", "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s", end.Type())
	}
	raw := a.MustCall("completions", map[string]any{"channel": def, "kind": "userMessage", "text": "/", "offset": 1})
	var res ahp.CompletionsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) == 0 {
		t.Fatalf("/ offered nothing after the CLI ran: %s", raw)
	}
	for _, it := range res.Items {
		if it.InsertText == "" || it.InsertText[0] != '/' || it.Attachment.Meta["command"] == nil {
			t.Fatalf("item %+v", it)
		}
	}
}
