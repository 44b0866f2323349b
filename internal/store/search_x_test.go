package store_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/store"
)

// TestSearchTextAgreesWithTheStores: the text a chat actor gives with a
// turn (chat.SearchText) is the text the store takes from the same turn's
// JSON when none is given (a fork's copy, a back-fill), so the index is one
// function of the body whichever path wrote it.
func TestSearchTextAgreesWithTheStores(t *testing.T) {
	s, err := store.Open(filepath.Join(t.TempDir(), "ahpd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	md := func(content string) ahp.ResponsePart {
		return ahp.ResponsePart{Kind: ahp.PartMarkdown, ID: "m", Content: content}
	}
	for _, turn := range []ahp.Turn{
		{ID: "a", Message: ahp.Message{Text: "only a message"}},
		{ID: "b", Message: ahp.Message{Text: ""}, ResponseParts: []ahp.ResponsePart{md("an answer")}},
		{ID: "c", Message: ahp.Message{Text: "ask ünïcode ✓ \"quoted\"\nnext line"}, ResponseParts: []ahp.ResponsePart{
			md("first"), {Kind: ahp.PartReasoning, ID: "r", Content: "hidden"},
			{Kind: ahp.PartToolCall, ToolCall: &ahp.ToolCallState{}}, md(""), md("last"),
			{Kind: ahp.PartSystemNotification, Content: "note"},
		}},
	} {
		body, err := json.Marshal(turn)
		if err != nil {
			t.Fatal(err)
		}
		fromSQL, err := store.TurnTextOf(s, string(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := chat.SearchText(&turn); got != fromSQL {
			t.Errorf("turn %s: chat.SearchText %q, the store's %q", turn.ID, got, fromSQL)
		}
	}
}
