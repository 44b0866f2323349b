package claude

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestModelTheCLIRefuses: a turn naming a model asks the CLI to switch;
// when the CLI will not take it, that is logged and the turn runs on the
// model the CLI has (C-TURN-79).
func TestModelTheCLIRefuses(t *testing.T) {
	s := newScripted(t, StopEndsTurn)
	var logs lockedBuffer
	s.c.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := s.c.Send(t.Context(), agent.Turn{ID: "t1", Text: "hello", Model: "no-such-model"}); err != nil {
		t.Fatal(err)
	}
	var reqID string
	var prompt string
	for _, w := range s.written() {
		switch w["type"] {
		case "control_request":
			if req, _ := w["request"].(map[string]any); req["subtype"] == "set_model" && req["model"] == "no-such-model" {
				reqID, _ = w["request_id"].(string)
			}
		case "user":
			prompt, _ = w["uuid"].(string)
		}
	}
	if reqID == "" || prompt == "" {
		t.Fatalf("no set_model request or prompt written")
	}
	s.feed(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": reqID, "error": "model not available"}})
	s.feed(initLine(), replay(prompt, "hello"))
	s.feed(answer("m1", "a1", "hi there")...)
	s.feed(result("success", false, "hi there"))
	var ended *agent.End
	for _, ev := range s.drain() {
		if ev.Kind == agent.EventTurnEnd && ev.TurnID == "t1" {
			ended = ev.End
		}
	}
	if ended == nil || ended.Outcome != agent.OutcomeComplete {
		t.Fatalf("the turn did not complete on the model the CLI has: %+v", ended)
	}
	if !strings.Contains(logs.String(), "would not take the model") || !strings.Contains(logs.String(), "no-such-model") {
		t.Fatalf("the refusal was not logged: %s", logs.String())
	}
}
