package reduce

import (
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// AHP's aggregation rule for SessionSummary.status (AggregateChats): the
// default chat's activity (else the most recently modified chat's), raised
// by any chat that needs input, failed or runs, in that precedence; the
// activity string follows the deciding chat; IsRead and IsArchived stay the
// session's; the session's own input queue raises InputNeeded.
func TestAggregateChats(t *testing.T) {
	chat := func(uri string, st ahp.SessionStatus, modified, activity string) ahp.ChatSummary {
		return ahp.ChatSummary{Resource: uri, Status: st, ModifiedAt: modified, Activity: activity}
	}
	const read = ahp.StatusIsRead
	tests := []struct {
		name         string
		state        ahp.SessionState
		wantStatus   ahp.SessionStatus
		wantActivity string
	}{
		{"the default chat runs", ahp.SessionState{Status: ahp.StatusIdle, DefaultChat: "a", Chats: []ahp.ChatSummary{
			chat("a", ahp.StatusInProgress, "1", "thinking"), chat("b", ahp.StatusIdle, "2", "")}},
			ahp.StatusInProgress, "thinking"},
		{"no default: the most recently modified chat", ahp.SessionState{Status: ahp.StatusIdle, Chats: []ahp.ChatSummary{
			chat("a", ahp.StatusError, "2026-12-05T01:00:00Z", "failed"), chat("b", ahp.StatusIdle, "2026-12-05T02:00:00Z", "")}},
			ahp.StatusError, "failed"},
		{"a peer that runs raises an idle session", ahp.SessionState{Status: ahp.StatusIdle, DefaultChat: "a", Chats: []ahp.ChatSummary{
			chat("a", ahp.StatusIdle, "1", ""), chat("b", ahp.StatusInProgress, "0", "peer at work")}},
			ahp.StatusInProgress, "peer at work"},
		{"input needed beats an error beats in progress", ahp.SessionState{Status: ahp.StatusIdle, DefaultChat: "a", Chats: []ahp.ChatSummary{
			chat("a", ahp.StatusInProgress, "1", ""), chat("b", ahp.StatusError, "0", "broke"), chat("c", ahp.StatusInputNeeded, "0", "asks")}},
			ahp.StatusInputNeeded, "asks"},
		{"the flags stay the session's", ahp.SessionState{Status: ahp.StatusIdle | read, DefaultChat: "a", Chats: []ahp.ChatSummary{
			chat("a", ahp.StatusInProgress|ahp.StatusIsArchived, "1", "")}},
			ahp.StatusInProgress | read, ""},
		{"the session's own input queue", ahp.SessionState{Status: ahp.StatusIdle, DefaultChat: "a",
			InputNeeded: []ahp.SessionInputRequest{{ID: "q", Kind: "elicitation"}},
			Chats:       []ahp.ChatSummary{chat("a", ahp.StatusInProgress, "1", "")}},
			ahp.StatusInputNeeded, ""},
		{"no chat: unchanged", ahp.SessionState{Status: ahp.StatusError, Activity: "kept"}, ahp.StatusError, "kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.state
			AggregateChats(&s)
			if s.Status != tt.wantStatus || s.Activity != tt.wantActivity {
				t.Fatalf("status %d activity %q, want %d %q", s.Status, s.Activity, tt.wantStatus, tt.wantActivity)
			}
		})
	}
}
