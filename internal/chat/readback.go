package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/turns"
)

// readBack rebuilds the turns of a chat the store holds none of from its
// backend's transcript: a conversation the backend's CLI wrote outside the
// daemon, or a chat whose store rows were lost. It needs a backend that
// reads transcripts (agent.TranscriptReader) and a record naming the
// conversation; a fork whose conversation is not open yet has none of its
// own. The turns are stored with their points, committed, and returned as
// records for Open to load. Anything that goes wrong is logged
// and reads back nothing.
func (be *backends) readBack(ctx context.Context) []store.TurnRecord {
	c := be.c
	reader, ok := c.cfg.Agent.(agent.TranscriptReader)
	if !ok || c.record.ConversationID == "" || ParseRecordMeta(c.record.Meta).PendingOpen != nil {
		return nil
	}
	tts, err := reader.ReadTurns(ctx, c.record.ConversationID, c.cfg.Directories)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		c.log.Warn("read the chat back from its transcript", "conversation", c.record.ConversationID, "err", err)
		return nil
	}
	if len(tts) == 0 {
		return nil
	}
	turns := TranscriptTurns(tts)
	recs := make([]store.TurnRecord, 0, len(turns))
	for i, t := range turns {
		body, err := json.Marshal(t)
		if err != nil {
			c.log.Error("marshal a turn read back", "turn", t.ID, "err", err)
			return nil
		}
		recs = append(recs, store.TurnRecord{
			Chat: c.cfg.URI, ID: t.ID, Seq: i, State: string(t.State), Point: tts[i].Point,
			StartedAt: parseISO(t.StartedAt), Body: body,
		})
	}
	// Committed before the chat opens: it keeps only its newest turns in
	// memory and reads the rest from the store (window.go).
	ops := make([]store.Op, 0, len(recs))
	for _, r := range recs {
		ops = append(ops, putTurnOp(r))
	}
	if err := c.cfg.Env.Store.CommitAll(ctx, ops...); err != nil {
		c.log.Warn("store the chat read back from its transcript", "conversation", c.record.ConversationID, "err", err)
		return nil
	}
	c.log.Info("read the chat back from its transcript", "conversation", c.record.ConversationID, "turns", len(recs))
	return recs
}

// TranscriptTurns turns what a backend read back from its transcript into
// the chat's turns, one per transcript turn in order, with the response
// parts the live turn engine produces: a markdown part per text block, a
// reasoning part per reasoning block, a systemNotification part per notice,
// and a tool call part per call, completed with its result, cancelled as
// denied when the user refused it, and cancelled (skipped) when it never
// finished. A failed turn ends with an error part; a stopped one is
// cancelled. The turns are built by running the actions the engine would
// have said through the chat reducer, so they match what clients that
// watched the turn hold. A turn says no sender: the transcript names none.
func TranscriptTurns(tts []agent.TranscriptTurn) []ahp.Turn {
	var st ahp.ChatState
	seen := make(map[string]bool, len(tts))
	for _, tt := range tts {
		id := tt.ID
		if id == "" || seen[id] {
			id = uuid.NewString()
		}
		seen[id] = true
		replayTurn(&st, id, tt)
	}
	if st.Turns == nil {
		return []ahp.Turn{}
	}
	return st.Turns
}

// replayTurn applies to st the actions that started, answered and ended tt
// under turn id.
func replayTurn(st *ahp.ChatState, id string, tt agent.TranscriptTurn) {
	apply := func(a ahp.Action) { reduce.Chat(st, a) }
	started := ""
	if !tt.Started.IsZero() {
		started = isoTime(tt.Started)
	}
	apply(ahp.ChatTurnStarted{TurnID: id, StartedAt: started, Message: ahp.Message{
		Text: tt.Text, Origin: ahp.MessageOrigin{Kind: "user"},
	}})
	for i, p := range tt.Parts {
		switch p.Kind {
		case agent.TranscriptMarkdown:
			if p.Text != "" {
				apply(ahp.ChatResponsePart{TurnID: id, Part: ahp.MarkdownPart(fmt.Sprintf("%s-md-%d", id, i), p.Text)})
			}
		case agent.TranscriptReasoning:
			if p.Text != "" {
				apply(ahp.ChatResponsePart{TurnID: id, Part: ahp.ReasoningPart(fmt.Sprintf("%s-rs-%d", id, i), p.Text)})
			}
		case agent.TranscriptNotice:
			apply(ahp.ChatResponsePart{TurnID: id, Part: ahp.SystemNotificationPart(p.Text, nil)})
		case agent.TranscriptToolCall:
			if p.Tool != nil && p.Tool.ID != "" {
				replayToolCall(apply, id, p)
			}
		}
	}
	if u := tt.Usage; u != nil {
		apply(ahp.ChatUsage{TurnID: id, Usage: turns.UsageInfo(*u)})
	}
	var dur int64
	if !tt.Started.IsZero() && tt.Ended.After(tt.Started) {
		dur = tt.Ended.Sub(tt.Started).Milliseconds()
	}
	switch tt.Outcome {
	case agent.OutcomeCancelled:
		apply(ahp.ChatTurnCancelled{TurnID: id, Duration: dur})
	case agent.OutcomeError:
		msg := tt.ErrorMessage
		if msg == "" {
			msg = "The turn failed."
		}
		apply(ahp.ChatError{TurnID: id, Duration: dur, Part: ahp.ErrorPart(ahp.ErrorInfo{ErrorType: tt.ErrorType, Message: msg}, false)})
	default:
		apply(ahp.ChatTurnComplete{TurnID: id, Duration: dur})
	}
}

// replayToolCall applies a tool call's start, its complete input, and its
// ending as the engine says them.
func replayToolCall(apply func(ahp.Action), turnID string, p agent.TranscriptPart) {
	tc := p.Tool
	apply(turns.ToolStart(turnID, tc))
	// A denied call was one that asked for confirmation.
	apply(turns.ToolReady(turnID, tc, p.Denied))
	switch {
	case p.Denied:
		apply(ahp.ChatToolCallConfirmed{TurnID: turnID, ToolCallID: tc.ID, Approved: false})
	case p.Done:
		apply(ahp.ChatToolCallComplete{TurnID: turnID, ToolCallID: tc.ID, Result: turns.ToolResult(tc)})
	}
	// A call that never finished is cancelled (skipped) when its turn ends.
}

// notePoint keeps the point a backend names at the end of turn id. Said
// before the turn's ending, it is stored with the ending. Said for a turn
// the host had already ended, it rewrites the stored turn: a client's stop
// ends the turn at once, and Claude's CLI names where the stopped turn
// ended only when its result comes. A fork or rewind at the stopped turn
// then resumes there (C-COMP-08, 09), as one at a turn read back from the
// transcript does (C-COMP-07).
func (c *Chat) notePoint(id, point string) {
	if point == "" || c.points[id] == point {
		return
	}
	i := c.turnIndex(id)
	if a := c.st().ActiveTurn; i < 0 && a != nil && a.ID == id {
		c.points[id] = point
		return
	}
	if i < 0 {
		// A turn older than the window: its stored row takes the point.
		if rec, ok := c.window.olderTurn(id); ok && rec.Point != point {
			rec.Point = point
			c.durable.enqueue(putTurnOp(rec))
		}
		return
	}
	c.points[id] = point
	t := c.st().Turns[i]
	body, err := json.Marshal(t)
	if err != nil {
		c.log.Error("marshal ended turn", "err", err)
		return
	}
	info := c.eng.Turn(t.ID)
	rec := store.TurnRecord{
		Chat: c.cfg.URI, ID: t.ID, Seq: c.eng.Window().Older() + i, State: string(t.State), Sender: info.Sender,
		Point: point, Command: info.Route == turns.RouteLocal, StartedAt: parseISO(t.StartedAt), Body: body,
	}
	c.durable.enqueue(putTurnOp(rec))
}
