package cofold

import (
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
)

// compactAt is the share of the model's context window past which older
// messages are summarised before the next model call.
const (
	compactNum = 3
	compactDen = 4
)

const summaryPrompt = "Summarise the conversation above for yourself, to go on with the work: the user's goals, what was done, files touched, decisions and open questions. Be concise; keep exact names, paths and numbers."

// keepFrom is where the verbatim tail starts when msgs are compacted: the
// latest user message that is a prompt (not tool results), so no call is
// parted from its result. 0 means nothing can be summarised.
func keepFrom(msgs []Message) int {
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == "user" {
			return i
		}
	}
	return 0
}

// lastSummary is the index of the latest compaction, -1 when none.
func lastSummary(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "summary" {
			return i
		}
	}
	return -1
}

// maybeCompact summarises the older messages with a model call when the
// context nears the model's window. Every turn stays in the chat's
// transcript; the model is sent the summary and the recent messages, and
// the turn says what was compacted and how many tokens went where.
func (c *conversation) maybeCompact(r *run, tg target, system string) error {
	before := estimateTokens(system, contextFor(c.msgs))
	if before*compactDen <= tg.window*compactNum {
		return nil
	}
	k := keepFrom(c.msgs)
	// Only what came after the latest compaction is new to summarise.
	from := 0
	if s := lastSummary(c.msgs); s >= 0 {
		from = s - c.msgs[s].Keep
	}
	if k <= from {
		return nil
	}
	older := contextFor(c.msgs[:k])
	resp, err := tg.api.stream(r.ctx, request{
		Model:     tg.model,
		System:    "You summarise a coding agent's conversation so it can go on with less context.",
		Messages:  append(older, Message{Role: "user", Text: summaryPrompt}),
		MaxTokens: min(tg.maxOut, max(tg.window/4, 256)),
	}, discardSink{})
	if err != nil {
		return err
	}
	summary := strings.TrimSpace(resp.Message.Text)
	if summary == "" {
		summary = "(the summary came back empty)"
	}
	compacted := k - max(from, 0)
	if err := c.append(Message{Role: "summary", TurnID: r.turn.ID, Text: summary, Keep: len(c.msgs) - k}); err != nil {
		return err
	}
	after := estimateTokens(system, contextFor(c.msgs))
	c.push(agent.Event{Kind: agent.EventNotice, TurnID: r.turn.ID, Text: fmt.Sprintf(
		"Compacted the conversation: %d earlier messages (about %d tokens) became a summary of about %d tokens; the context went from about %d to %d tokens of the model's %d.",
		compacted, estimateTokens("", older), estimateTokens("", []Message{{Text: summary}}), before, after, tg.window)})
	return nil
}
