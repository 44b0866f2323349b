package cofold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/store"
)

// storeTimeout bounds one write of the conversation; it is not bound to
// the turn, so what a stopped turn said is still kept.
const storeTimeout = 10 * time.Second

var cancelled = agent.End{Outcome: agent.OutcomeCancelled}

// runTurn runs one turn: the prompt, then model steps and their tool calls
// until the model answers without a call. A turn resumed after a
// resumable error (its prompt is the last thing stored) goes on from
// where it failed.
func (c *conversation) runTurn(r *run) (end agent.End) {
	defer func() { end.Point = pointOf(len(c.msgs)) }()
	if err := c.load(); err != nil {
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "cofoldStore", Message: err.Error()}
	}
	want := r.turn.Model
	if want == "" {
		want = c.model
	}
	tg, err := c.a.resolve(want)
	if err != nil {
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "noProvider", Message: err.Error()}
	}
	if n := len(c.msgs); n == 0 || c.msgs[n-1].TurnID != r.turn.ID {
		if err := c.append(Message{Role: "user", TurnID: r.turn.ID, Text: promptText(r.turn), Images: promptImages(r.turn)}); err != nil {
			return storeEnd(err)
		}
	}
	system := c.systemPrompt(r.turn)
	mode := c.mode
	usage := agent.Usage{Model: tg.provider.Name + "/" + tg.model}
	for range c.a.settings.maxSteps() {
		if c.isStopped(r) {
			return cancelled
		}
		// C-TURN-87, 90: steering goes into the transcript before the
		// model's next step, and is taken out of the chat once written.
		for _, s := range c.takeSteering(r) {
			if err := c.append(Message{Role: "user", TurnID: r.turn.ID, Text: s.Text}); err != nil {
				return storeEnd(err)
			}
			c.push(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.turn.ID, SteeringID: s.ID})
		}
		if err := c.maybeCompact(r, tg, system); err != nil {
			if c.isStopped(r) {
				return cancelled
			}
			return modelEnd(err)
		}
		sk := &streamSink{c: c, turnID: r.turn.ID}
		resp, err := tg.api.stream(r.ctx, request{
			Model:     tg.model,
			System:    system,
			Messages:  contextFor(c.msgs),
			Tools:     offeredTools(mode, c.hostTools),
			MaxTokens: tg.maxOut,
			Effort:    c.a.settings.ReasoningEffort,
		}, sk)
		usage.InputTokens = resp.InputTokens
		usage.OutputTokens += resp.OutputTokens
		usage.CacheRead = resp.CacheRead
		if resp.InputTokens > 0 || resp.OutputTokens > 0 {
			u := usage
			c.push(agent.Event{Kind: agent.EventUsage, TurnID: r.turn.ID, Usage: &u})
		}
		if err != nil {
			if isCancel(r.ctx, err) {
				// What streamed before the stop stays in the conversation,
				// as the client saw it; calls not yet whole are dropped.
				partial := resp.Message
				partial.TurnID, partial.Calls = r.turn.ID, nil
				if partial.Text != "" || partial.Reasoning != "" {
					_ = c.append(partial)
				}
				return cancelled
			}
			return modelEnd(err)
		}
		msg := resp.Message
		msg.TurnID = r.turn.ID
		if err := c.append(msg); err != nil {
			return storeEnd(err)
		}
		if len(msg.Calls) == 0 {
			return agent.End{Outcome: agent.OutcomeComplete}
		}
		results := c.runCalls(r, mode, msg.Calls)
		if err := c.append(Message{Role: "tool", TurnID: r.turn.ID, Results: results}); err != nil {
			return storeEnd(err)
		}
	}
	return agent.End{Outcome: agent.OutcomeError, ErrorType: "maxSteps",
		Message: fmt.Sprintf("cofold stopped: the turn reached its limit of %d model calls (maxSteps)", c.a.settings.maxSteps())}
}

func storeEnd(err error) agent.End {
	return agent.End{Outcome: agent.OutcomeError, ErrorType: "cofoldStore", Message: err.Error()}
}

// modelEnd is a failed model call's ending, with the provider's message;
// one that may well succeed later is offered as resumable.
func modelEnd(err error) agent.End {
	var me *modelError
	if errors.As(err, &me) {
		typ := me.Type
		if typ == "" {
			typ = "modelError"
		}
		return agent.End{Outcome: agent.OutcomeError, ErrorType: typ, Message: me.Error(), Resumable: me.resumable()}
	}
	return agent.End{Outcome: agent.OutcomeError, ErrorType: "modelError", Message: err.Error(), Resumable: true}
}

// load reads the stored conversation once.
func (c *conversation) load() error {
	if c.loaded {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rows, err := c.store.Messages(ctx, c.id)
	if err != nil {
		return err
	}
	msgs := make([]Message, 0, len(rows))
	for _, row := range rows {
		var m Message
		if err := json.Unmarshal(row.Body, &m); err != nil {
			return fmt.Errorf("cofold conversation %s: message %d: %w", c.id, row.Seq, err)
		}
		msgs = append(msgs, m)
	}
	c.msgs, c.loaded = msgs, true
	return nil
}

// append stores m and adds it to the conversation.
func (c *conversation) append(m Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cofold conversation %s: %w", c.id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	row := store.CofoldMessage{Seq: len(c.msgs), Turn: m.TurnID, Body: body}
	if err := c.store.Append(ctx, c.id, []store.CofoldMessage{row}); err != nil {
		return err
	}
	c.msgs = append(c.msgs, m)
	return nil
}

// promptText is what a turn says to the model: its text and its
// attachments (inlined text, or where a file is).
func promptText(t agent.Turn) string {
	var b strings.Builder
	b.WriteString(t.Text)
	for _, a := range t.Attachments {
		name := a.Label
		if name == "" {
			name = a.Path
		}
		switch a.As {
		case "inline":
			fmt.Fprintf(&b, "\n\n<attachment name=%q>\n%s\n</attachment>", name, a.Text)
		case "path":
			if a.Path != "" {
				fmt.Fprintf(&b, "\n\nAttached: %s (%s)", name, a.Path)
			}
		case "image":
			if !sendableImage(a) {
				fmt.Fprintf(&b, "\n\nAttached image %s (not sent: %s is not an image type the model APIs take)", name, a.MimeType)
			}
		}
	}
	return b.String()
}

// sendableImage: an image both APIs take inline.
func sendableImage(a agent.Attachment) bool {
	switch a.MimeType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return len(a.Data) > 0
	}
	return false
}

// promptImages are a turn's images, sent beside its text.
func promptImages(t agent.Turn) []Image {
	var out []Image
	for _, a := range t.Attachments {
		if a.As == "image" && sendableImage(a) {
			out = append(out, Image{MimeType: a.MimeType, Data: a.Data})
		}
	}
	return out
}

// systemPrompt is cofold's instructions, the configured ones, and what the
// host has to say on this turn (C-TURN-110).
func (c *conversation) systemPrompt(t agent.Turn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are cofold, a coding agent. You work in %s", c.dirs[0])
	if len(c.dirs) > 1 {
		fmt.Fprintf(&b, " (and %s)", strings.Join(c.dirs[1:], ", "))
	}
	b.WriteString(". Use the tools to read, search and edit files and to run commands; relative paths are in the first directory. Read a file before editing it. Rename the chat only when asked to.")
	if s := c.a.settings.Instructions; s != "" {
		b.WriteString("\n\n" + s)
	}
	if t.HostContext != "" {
		b.WriteString("\n\n<host-context>\n" + t.HostContext + "\n</host-context>")
	}
	return b.String()
}

// streamSink turns a model stream into events.
type streamSink struct {
	c      *conversation
	turnID string
	// call is the id of the call whose input streams.
	call string
}

func (s *streamSink) text(t string) {
	s.c.push(agent.Event{Kind: agent.EventText, TurnID: s.turnID, Text: t})
}

func (s *streamSink) reasoning(t string) {
	s.c.push(agent.Event{Kind: agent.EventReasoning, TurnID: s.turnID, Text: t})
}

func (s *streamSink) toolStart(id, name string) {
	s.call = id
	s.c.push(agent.Event{Kind: agent.EventToolStart, TurnID: s.turnID, ToolCall: &agent.ToolCall{ID: id, Name: name, DisplayName: displayName(name)}})
}

func (s *streamSink) toolInput(t string) {
	if s.call == "" {
		return
	}
	s.c.push(agent.Event{Kind: agent.EventToolInput, TurnID: s.turnID, Text: t, ToolCall: &agent.ToolCall{ID: s.call}})
}

// discardSink takes a stream nobody is shown (a compaction's summary).
type discardSink struct{}

func (discardSink) text(string)              {}
func (discardSink) reasoning(string)         {}
func (discardSink) toolStart(string, string) {}
func (discardSink) toolInput(string)         {}

// newCallID names a call a server sent without an id.
func newCallID() string { return "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16] }
