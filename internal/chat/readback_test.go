package chat

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TranscriptTurns builds each turn as the live engine leaves it: a
// markdown part per text block, reasoning and notice parts, tool calls
// completed, denied or skipped, an error part ending a failed turn, a
// stopped turn cancelled, with duration and usage (C-TURN-113, C-TURN-115).
func TestTranscriptTurns(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tts := []agent.TranscriptTurn{
		{
			ID: "p1", Text: "one", Outcome: agent.OutcomeComplete, Point: "a3",
			Started: start, Ended: start.Add(1500 * time.Millisecond),
			Usage: &agent.Usage{InputTokens: 30, OutputTokens: 9, CacheRead: 3, Model: "claude-x"},
			Parts: []agent.TranscriptPart{
				{Kind: agent.TranscriptReasoning, Text: "hmm"},
				{Kind: agent.TranscriptToolCall, Done: true, Tool: &agent.ToolCall{
					ID: "tu1", Name: "Bash", DisplayName: "Bash", Input: `{"command":"ls"}`, Invocation: "Run `ls`",
					Success: true, Output: "file", PastTense: "Ran `ls`",
				}},
				{Kind: agent.TranscriptMarkdown, Text: "done"},
				{Kind: agent.TranscriptMarkdown, Text: "more"},
			},
		},
		{
			ID: "p2", Text: "two", Outcome: agent.OutcomeComplete,
			Parts: []agent.TranscriptPart{
				{Kind: agent.TranscriptToolCall, Done: true, Denied: true, Tool: &agent.ToolCall{
					ID: "tu2", Name: "Bash", Input: `{"command":"touch x"}`, Error: "The user denied this tool call.",
				}},
				{Kind: agent.TranscriptNotice, Text: "Conversation compacted."},
			},
		},
		{
			ID: "p3", Text: "three", Outcome: agent.OutcomeCancelled,
			Parts: []agent.TranscriptPart{
				{Kind: agent.TranscriptToolCall, Tool: &agent.ToolCall{ID: "tu3", Name: "Bash", Input: `{}`}},
			},
		},
		{ID: "p4", Text: "boom", Outcome: agent.OutcomeError, ErrorType: "api_error", ErrorMessage: "API Error: 500"},
		// A turn with no id, or one already taken, gets a fresh one.
		{ID: "p4", Text: "again", Outcome: agent.OutcomeComplete},
	}
	turns := TranscriptTurns(tts)
	if len(turns) != 5 {
		t.Fatalf("%d turns", len(turns))
	}
	one := turns[0]
	if one.ID != "p1" || one.Message.Text != "one" || one.Message.Origin.Kind != "user" || one.State != ahp.TurnComplete ||
		one.StartedAt != "2026-01-02T03:04:05.000Z" || one.Duration == nil || *one.Duration != 1500 {
		t.Errorf("turn one %s", js(t, one))
	}
	if u := one.Usage; u == nil || u.InputTokens != 30 || u.OutputTokens != 9 || u.CacheReadTokens == nil || *u.CacheReadTokens != 3 || u.Model != "claude-x" {
		t.Errorf("turn one usage %+v", one.Usage)
	}
	kinds := func(turn ahp.Turn) []string {
		var out []string
		for _, p := range turn.ResponseParts {
			out = append(out, p.Kind)
		}
		return out
	}
	if got := kinds(one); js(t, got) != `["reasoning","toolCall","markdown","markdown"]` {
		t.Errorf("turn one parts %v", got)
	}
	if p := one.ResponseParts[2]; p.Content != "done" || p.ID == "" || p.ID == one.ResponseParts[3].ID {
		t.Errorf("markdown parts %+v %+v", p, one.ResponseParts[3])
	}
	tc := one.ResponseParts[1].ToolCall
	if tc.Status != ahp.ToolCompleted || tc.Success == nil || !*tc.Success || tc.PastTenseMessage.String() != "Ran `ls`" ||
		len(tc.Content) != 1 || tc.Content[0].Text != "file" || tc.InvocationMessage.String() != "Run `ls`" ||
		string(tc.ToolInput) != `"{\"command\":\"ls\"}"` || tc.DisplayName != "Bash" {
		t.Errorf("completed call %s", js(t, tc))
	}
	denied := turns[1].ResponseParts[0].ToolCall
	if denied.Status != ahp.ToolCancelled || denied.Reason != ahp.CancelDenied || denied.DisplayName != "Bash" {
		t.Errorf("denied call %s", js(t, denied))
	}
	if p := turns[1].ResponseParts[1]; p.Kind != ahp.PartSystemNotification || p.Content != "Conversation compacted." {
		t.Errorf("notice %+v", p)
	}
	stopped := turns[2]
	if stopped.State != ahp.TurnCancelled || stopped.ResponseParts[0].ToolCall.Status != ahp.ToolCancelled ||
		stopped.ResponseParts[0].ToolCall.Reason != ahp.CancelSkipped || stopped.StartedAt != "" {
		t.Errorf("stopped turn %s", js(t, stopped))
	}
	failed := turns[3]
	last := failed.ResponseParts[len(failed.ResponseParts)-1]
	if failed.State != ahp.TurnError || last.Kind != ahp.PartError || last.Error.Message != "API Error: 500" ||
		last.Error.ErrorType != "api_error" || last.IsResumableError() {
		t.Errorf("failed turn %s", js(t, failed))
	}
	if turns[4].ID == "p4" || turns[4].ID == "" {
		t.Errorf("a taken id was used again: %q", turns[4].ID)
	}
	if got := TranscriptTurns(nil); got == nil || len(got) != 0 {
		t.Errorf("no turns: %v", got)
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
