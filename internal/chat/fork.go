package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/store"
)

// RecordMeta is what a chat keeps in its record's Meta.
type RecordMeta struct {
	// PendingOpen says how the backend conversation is opened the first
	// time the chat sends a turn (a fork resumes its source at a point).
	PendingOpen *PendingOpen `json:"pendingOpen,omitempty"`
	// FirstPromptContext goes into the chat's first prompt as what the host
	// has to say (a side chat's source turn, C-FROM-13); never into its
	// visible history (C-FROM-14).
	FirstPromptContext string `json:"firstPromptContext,omitempty"`
	// BackendStarted: the backend holds a conversation under the record's
	// ConversationID (a turn was handed to it), so the next open resumes it
	// even when the chat shows no turn (after a clear-all rewind on a
	// backend that kept it).
	BackendStarted bool `json:"backendStarted,omitempty"`
	// Cleared: a client cleared the chat while its backend kept the
	// conversation, so the chat is not read back from the backend's
	// transcript.
	Cleared bool `json:"cleared,omitempty"`
	// Pending are the chat's steering and queued messages, kept so a
	// restart loses none.
	Steering *ahp.PendingMessage  `json:"steering,omitempty"`
	Queued   []ahp.PendingMessage `json:"queued,omitempty"`
	// PendingSenders names who set each pending message, by id.
	PendingSenders map[string]string `json:"pendingSenders,omitempty"`
	// Behind are the turns clients sent while a turn ran, not yet said.
	Behind []BehindStart `json:"behind,omitempty"`
	// Canvases are the chat's canvases in opening order, without urls
	// (canvases.go).
	Canvases []canvas.Stored `json:"canvases,omitempty"`
}

// BehindStart is a client's chat/turnStarted held behind a running turn.
type BehindStart struct {
	Action ahp.ChatTurnStarted `json:"action"`
	Origin *ahp.ActionOrigin   `json:"origin,omitempty"`
	Sender string              `json:"sender,omitempty"`
}

// PendingOpen is a fork or a rewind waiting for the chat's next turn.
type PendingOpen struct {
	// Rewind: reopen the chat's own conversation cut back to Point;
	// otherwise a fork of Source at Point.
	Rewind bool   `json:"rewind,omitempty"`
	Source string `json:"source,omitempty"`
	Point  string `json:"point"`
}

// ParseRecordMeta reads a chat record's Meta.
func ParseRecordMeta(raw json.RawMessage) RecordMeta {
	var m RecordMeta
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

// metaCache is the chat record's Meta as last parsed, with the bytes it
// was parsed from: the hot readers (what waits, on every message queued
// or taken; the backend's first use and the host's context, on every turn
// sent) read it parsed once per change, not once per call (the parse was
// 5% of a streamed turn's CPU, issue 37). A new Meta is a new slice
// (RecordMeta.Raw), so the bytes' identity says whether it changed.
type metaCache struct {
	raw  json.RawMessage
	meta RecordMeta
}

// of returns raw parsed. The copy shares its slices, maps and pointers
// with the cache: a caller replaces a field, never what one points to.
func (mc *metaCache) of(raw json.RawMessage) RecordMeta {
	if len(raw) != len(mc.raw) || (len(raw) > 0 && &raw[0] != &mc.raw[0]) {
		mc.raw, mc.meta = raw, ParseRecordMeta(raw)
	}
	return mc.meta
}

// Raw encodes the meta for a record.
func (m RecordMeta) Raw() json.RawMessage {
	if m.PendingOpen == nil && m.FirstPromptContext == "" && !m.BackendStarted && !m.Cleared && m.Steering == nil && len(m.Queued) == 0 && len(m.PendingSenders) == 0 && len(m.Behind) == 0 && len(m.Canvases) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

// ForkSource is what a fork at a turn copies out of its source chat.
type ForkSource struct {
	// Turns are the source's turns up to and including the named turn, as
	// records ready to store under the new chat (C-FROM-03).
	Turns []store.TurnRecord
	// ConversationID and Point: resume the source's conversation at Point
	// (empty Point: the backend names no point for that turn, and the new
	// chat begins a conversation of its own, C-FROM-08, 09).
	ConversationID string
	Point          string
}

// ErrNoSuchTurn: the chat holds no turn of the id asked for.
var ErrNoSuchTurn = errors.New("no such turn")

// ForkAt returns what a fork of this chat at turnID copies. A fork at a !
// command's turn forks the backend at the turn before it (C-FROM-10) and
// keeps the command turns it copied (C-FROM-11). The turns older than the
// window are copied from the store by the caller's goroutine.
func (c *Chat) ForkAt(ctx context.Context, newChat, turnID string) (ForkSource, error) {
	var fs ForkSource
	var ferr error
	err := c.withOlder(ctx, &olderTurns{recordsOnly: true}, func(o *olderTurns) bool {
		base := c.eng.Window().Older()
		idx := c.turnIndex(turnID)
		seq := base + idx
		if idx < 0 {
			r, ok := c.window.olderTurn(turnID)
			if !ok {
				ferr = fmt.Errorf("%w: params.source.turnId: %q is not a completed turn of %s", ErrNoSuchTurn, turnID, c.cfg.URI)
				return true
			}
			seq = r.Seq
		}
		if !o.has(0, min(seq+1, base)) {
			o.want(0, min(seq+1, base))
			return false
		}
		stored, _ := o.span(0, min(seq+1, base))
		fs = ForkSource{Turns: make([]store.TurnRecord, 0, len(stored)+idx+1)}
		for _, r := range stored {
			r.Chat = newChat
			fs.Turns = append(fs.Turns, r)
		}
		for i := 0; i <= idx; i++ {
			t := c.st().Turns[i]
			body, err := json.Marshal(t)
			if err != nil {
				ferr = fmt.Errorf("copy turn %s: %w", t.ID, err)
				return true
			}
			started := parseISO(t.StartedAt)
			fs.Turns = append(fs.Turns, store.TurnRecord{
				Chat: newChat, ID: t.ID, Seq: base + i, State: string(t.State), Sender: c.eng.Turn(t.ID).Sender,
				Point: c.points[t.ID], Command: c.isLocal(t.ID), StartedAt: started, Body: body,
			})
		}
		fs.ConversationID = c.record.ConversationID
		for i := len(fs.Turns) - 1; i >= 0; i-- {
			if r := fs.Turns[i]; !r.Command {
				fs.Point = r.Point
				break
			}
		}
		return true
	})
	if err != nil {
		return ForkSource{}, err
	}
	return fs, ferr
}

// SideChatContext is what a side chat is told about the turn it was opened
// on: what was said and what the agent answered, for its first prompt. The
// turn may be one the chat keeps or the one running (AHP resolves
// SideChatSource.turnId against both): a running turn gives what the agent
// has answered so far.
func (c *Chat) SideChatContext(ctx context.Context, turnID string, selection *ahp.ChatSelection) (string, error) {
	var text string
	var ferr error
	err := c.call(ctx, func() {
		for i := range c.st().Turns {
			if t := &c.st().Turns[i]; t.ID == turnID {
				text = sideChatText(t.Message.Text, t.ResponseParts, false, selection)
				return
			}
		}
		if at := c.st().ActiveTurn; at != nil && at.ID == turnID {
			text = sideChatText(at.Message.Text, at.ResponseParts, true, selection)
			return
		}
		if r, ok := c.window.olderTurn(turnID); ok {
			t, err := storedTurn(r)
			if err != nil {
				ferr = fmt.Errorf("side chat on %s: %w", c.cfg.URI, err)
				return
			}
			text = sideChatText(t.Message.Text, t.ResponseParts, false, selection)
			return
		}
		ferr = ahp.Errorf(ahp.ErrInvalidParams, "params.source.turnId: %q is neither a turn nor the running turn of %s", turnID, c.cfg.URI)
	})
	if err != nil {
		return "", err
	}
	return text, ferr
}

// sideChatText is a side chat's first words about the turn it was opened on.
func sideChatText(said string, parts []ahp.ResponsePart, running bool, selection *ahp.ChatSelection) string {
	var b strings.Builder
	b.WriteString("This is a side chat about a turn of another conversation.\n")
	b.WriteString("The user said:\n")
	b.WriteString(said)
	if running {
		b.WriteString("\n\nThe assistant is still answering; so far it said:\n")
	} else {
		b.WriteString("\n\nThe assistant answered:\n")
	}
	for _, p := range parts {
		if p.Kind == ahp.PartMarkdown {
			b.WriteString(p.Content)
		}
	}
	if selection != nil && selection.Text != "" {
		b.WriteString("\n\nThe user picked out this part of it:\n")
		b.WriteString(selection.Text)
	}
	return b.String()
}
