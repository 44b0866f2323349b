package chat

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// A side chat's first words name what was said and what the agent
// answered, saying so when the turn is still running, and the selection.
func TestSideChatText(t *testing.T) {
	parts := []ahp.ResponsePart{{Kind: ahp.PartMarkdown, Content: "half an "}, {Kind: ahp.PartReasoning, Content: "hidden"}, {Kind: ahp.PartMarkdown, Content: "answer"}}
	tests := []struct {
		name      string
		running   bool
		selection *ahp.ChatSelection
		want      []string
		not       []string
	}{
		{"a kept turn", false, nil, []string{"The user said:\nwhy?", "The assistant answered:\nhalf an answer"}, []string{"still answering", "hidden", "picked out"}},
		{"the running turn", true, nil, []string{"still answering; so far it said:\nhalf an answer"}, []string{"The assistant answered:"}},
		{"with a selection", false, &ahp.ChatSelection{Text: "an answer"}, []string{"picked out this part of it:\nan answer"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sideChatText("why?", parts, tt.running, tt.selection)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in %q", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q should not be in %q", n, got)
				}
			}
		})
	}
}
