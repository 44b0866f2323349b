package reduce

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// fuzzSeeds adds every action of the conformance fixtures (when they are
// beside the repository) and a few hand-made ones.
func fuzzSeeds(f *testing.F) {
	f.Add([]byte(`{"type":"chat/delta","turnId":"t","partId":"p","content":"x"}`))
	f.Add([]byte(`{"type":"chat/toolCallComplete","turnId":"t","toolCallId":"c","result":{"success":true}}`))
	f.Add([]byte(`{"type":"chat/turnsLoaded","turns":[{"id":"a","message":{"text":"","origin":{"kind":"user"}},"responseParts":[],"state":"complete"}]}`))
	f.Add([]byte(`{"type":"session/chatUpdated","chat":"c","changes":{"title":"t"}}`))
	dir := fixturesDir()
	if dir == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "reducers", "*.json"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var fx struct {
			Actions []json.RawMessage `json:"actions"`
		}
		if json.Unmarshal(raw, &fx) == nil {
			for _, a := range fx.Actions {
				f.Add([]byte(a))
			}
		}
	}
}

func fixturesDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		d := filepath.Join(dir, "testdata", "conformance", "test-cases")
		if _, err := os.Stat(d); err == nil {
			return d
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func fuzzChatState() ahp.ChatState {
	tc := &ahp.ToolCallState{Status: ahp.ToolRunning, ToolCallID: "c", ToolName: "n", DisplayName: "n"}
	return ahp.ChatState{
		Resource: "ahp-chat:/f", Title: "f", Status: ahp.StatusInProgress, ModifiedAt: "1970-01-01T00:00:00.000Z",
		Turns: []ahp.Turn{{ID: "old", Message: ahp.Message{Text: "o"}, State: ahp.TurnComplete}},
		ActiveTurn: &ahp.ActiveTurn{ID: "t", StartedAt: "1970-01-01T00:00:00.000Z",
			ResponseParts: []ahp.ResponsePart{ahp.MarkdownPart("p", "x"), ahp.ReasoningPart("r", "y"), ahp.ToolCallPart(tc)}},
		QueuedMessages:  []ahp.PendingMessage{{ID: "q"}},
		SteeringMessage: &ahp.PendingMessage{ID: "s"},
	}
}

// FuzzChat: no action a client can send, decoded or not, panics a chat
// reducer; the state it leaves still encodes.
func FuzzChat(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ahp.DecodeAction(raw)
		if err != nil {
			return
		}
		st := fuzzChatState()
		Chat(&st, a)
		Chat(&st, a) // twice: idempotent actions and repeats must hold too
		if _, err := json.Marshal(st); err != nil {
			t.Fatalf("state after %s does not encode: %v", raw, err)
		}
	})
}

// FuzzSession: likewise for the session reducer.
func FuzzSession(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ahp.DecodeAction(raw)
		if err != nil {
			return
		}
		st := ahp.SessionState{Resource: "s", Title: "s", Status: ahp.StatusIdle, Lifecycle: "ready",
			Chats: []ahp.ChatSummary{{Resource: "c", Title: "c", Status: ahp.StatusIdle}}, DefaultChat: "c"}
		Session(&st, a)
		Session(&st, a)
		if _, err := json.Marshal(st); err != nil {
			t.Fatalf("state after %s does not encode: %v", raw, err)
		}
	})
}
