package claude

import (
	"context"
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
)

// ReadTurns reads a conversation back from the CLI's transcript as
// backend-neutral turns (agent.TranscriptReader): ReadTranscript's turns,
// each naming its last chain entry as its point (C-COMP-07). The CLI runs
// in the first of directories. A conversation with no transcript is an
// error wrapping fs.ErrNotExist.
func (c *Claude) ReadTurns(ctx context.Context, conversationID string, directories []string) ([]agent.TranscriptTurn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read claude transcript %s: %w", conversationID, err)
	}
	if conversationID == "" || strings.ContainsAny(conversationID, `/\`) || strings.Contains(conversationID, "..") {
		return nil, fmt.Errorf("read claude transcript %q: bad id", conversationID)
	}
	cwd := ""
	if len(directories) > 0 {
		cwd = directories[0]
	}
	turns, err := c.ReadTranscript(conversationID, cwd)
	if err != nil {
		return nil, err
	}
	out := make([]agent.TranscriptTurn, 0, len(turns))
	for i := range turns {
		out = append(out, turns[i].neutral())
	}
	return out, nil
}

// neutral is the turn as an agent.TranscriptTurn.
func (t *TranscriptTurn) neutral() agent.TranscriptTurn {
	out := agent.TranscriptTurn{
		ID:           t.PromptID,
		Text:         t.UserText,
		Steering:     append([]string(nil), t.Steering...),
		Point:        t.Point,
		Started:      t.Started,
		Ended:        t.Ended,
		ErrorMessage: t.Error,
		ErrorType:    t.ErrorType,
	}
	switch t.State {
	case TurnCancelled:
		out.Outcome = agent.OutcomeCancelled
	case TurnError:
		out.Outcome = agent.OutcomeError
	default:
		out.Outcome = agent.OutcomeComplete
	}
	if u := t.Usage; u != (agent.Usage{}) {
		out.Usage = &u
	}
	for _, p := range t.Parts {
		np := agent.TranscriptPart{Text: p.Text, Done: p.ToolDone, Denied: p.Denied}
		switch p.Kind {
		case PartMarkdown:
			np.Kind = agent.TranscriptMarkdown
		case PartReasoning:
			np.Kind = agent.TranscriptReasoning
		case PartNotice:
			np.Kind = agent.TranscriptNotice
		case PartToolCall:
			np.Kind = agent.TranscriptToolCall
			tc := *p.Tool
			np.Tool = &tc
		default:
			continue
		}
		out.Parts = append(out.Parts, np)
	}
	return out
}

var _ agent.TranscriptReader = (*Claude)(nil)
