package acp

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
)

// maxReplayTurns bounds the turns a session/load replay is rebuilt into;
// older ones are dropped from the front (and logged).
const maxReplayTurns = 10000

// replay rebuilds turns from what a session/load replays: each run of
// user_message_chunk updates opens a turn, and what the agent said after
// it are its parts.
type replay struct {
	turns []agent.TranscriptTurn
	// tools locates each tool call's part: its turn (counted from the
	// first turn ever added) and its index in that turn's parts.
	tools   map[acpsdk.ToolCallId][2]int
	dropped int
}

func newReplay() *replay { return &replay{tools: make(map[acpsdk.ToolCallId][2]int)} }

func (r *replay) last() *agent.TranscriptTurn {
	if len(r.turns) == 0 {
		r.turns = append(r.turns, agent.TranscriptTurn{Outcome: agent.OutcomeComplete})
	}
	return &r.turns[len(r.turns)-1]
}

func (r *replay) add(u acpsdk.SessionUpdate) {
	switch {
	case u.UserMessageChunk != nil:
		t := r.last()
		if len(t.Parts) > 0 || len(r.turns) == 0 {
			r.turns = append(r.turns, agent.TranscriptTurn{Outcome: agent.OutcomeComplete})
			if len(r.turns) > maxReplayTurns {
				r.turns = r.turns[1:]
				r.dropped++
			}
			t = r.last()
		}
		t.Text += blockText(u.UserMessageChunk.Content)
	case u.AgentMessageChunk != nil:
		r.text(agent.TranscriptMarkdown, blockText(u.AgentMessageChunk.Content))
	case u.AgentThoughtChunk != nil:
		r.text(agent.TranscriptReasoning, blockText(u.AgentThoughtChunk.Content))
	case u.ToolCall != nil:
		t := r.last()
		tc := u.ToolCall
		p := agent.TranscriptPart{Kind: agent.TranscriptToolCall, Tool: &agent.ToolCall{
			ID: string(tc.ToolCallId), Name: string(tc.Kind), DisplayName: tc.Title, Invocation: tc.Title,
		}}
		if p.Tool.Name == "" {
			p.Tool.Name = "tool"
		}
		t.Parts = append(t.Parts, p)
		r.tools[tc.ToolCallId] = [2]int{r.dropped + len(r.turns) - 1, len(t.Parts) - 1}
		r.status(tc.ToolCallId, &tc.Status, tc.Content)
	case u.ToolCallUpdate != nil:
		r.status(u.ToolCallUpdate.ToolCallId, u.ToolCallUpdate.Status, u.ToolCallUpdate.Content)
	}
}

func (r *replay) text(kind agent.TranscriptPartKind, s string) {
	t := r.last()
	if n := len(t.Parts); n > 0 && t.Parts[n-1].Kind == kind {
		t.Parts[n-1].Text += s
		return
	}
	t.Parts = append(t.Parts, agent.TranscriptPart{Kind: kind, Text: s})
}

func (r *replay) status(id acpsdk.ToolCallId, st *acpsdk.ToolCallStatus, content []acpsdk.ToolCallContent) {
	at, ok := r.tools[id]
	ti := at[0] - r.dropped
	if !ok || st == nil || ti < 0 || ti >= len(r.turns) || at[1] >= len(r.turns[ti].Parts) {
		return
	}
	p := &r.turns[ti].Parts[at[1]]
	var out []string
	for _, c := range content {
		if c.Content != nil {
			out = append(out, blockText(c.Content.Content))
		}
	}
	switch *st {
	case acpsdk.ToolCallStatusCompleted:
		p.Done, p.Tool.Success, p.Tool.Output = true, true, strings.Join(out, "\n")
	case acpsdk.ToolCallStatusFailed:
		p.Done, p.Tool.Error = true, strings.Join(out, "\n")
	}
}

// result is the rebuilt turns, the host's context taken out of prompts.
func (r *replay) result() []agent.TranscriptTurn {
	out := make([]agent.TranscriptTurn, 0, len(r.turns))
	for _, t := range r.turns {
		t.Text = stripHostContext(t.Text)
		if t.Text == "" && len(t.Parts) == 0 {
			continue
		}
		out = append(out, t)
	}
	return out
}

// ReadTurns starts the agent, loads the conversation's session and
// rebuilds its turns from the replay (agent.TranscriptReader). A
// conversation with no kept session, or an agent without session/load, is
// an error wrapping fs.ErrNotExist.
func (a *Agent) ReadTurns(ctx context.Context, conversationID string, directories []string) ([]agent.TranscriptTurn, error) {
	rec, found, err := a.session(conversationID)
	if err != nil {
		return nil, fmt.Errorf("read %s conversation %s: %w", a.opts.Name, conversationID, err)
	}
	if !found {
		return nil, fmt.Errorf("read %s conversation %s: %w", a.opts.Name, conversationID, fs.ErrNotExist)
	}
	if len(directories) == 0 {
		directories = []string{rec.Cwd}
	}
	bin, err := a.binary()
	if err != nil {
		return nil, fmt.Errorf("read %s conversation %s: %w", a.opts.Name, conversationID, err)
	}
	c := newConversation(a, bin, agent.OpenParams{ConversationID: conversationID, Directories: directories})
	defer c.Close()
	run := newTurnRun(agent.Turn{ID: "read-back"})
	stop := context.AfterFunc(ctx, run.cancel)
	defer stop()
	p, err := c.ensureProcess(run)
	if err != nil {
		return nil, fmt.Errorf("read %s conversation %s: %w", a.opts.Name, conversationID, err)
	}
	c.mu.Lock()
	caps := c.caps
	c.mu.Unlock()
	if !caps.LoadSession {
		return nil, fmt.Errorf("read %s conversation %s: the agent has no session/load: %w", a.opts.Name, conversationID, fs.ErrNotExist)
	}
	rp := newReplay()
	c.mu.Lock()
	c.replay = rp
	c.mu.Unlock()
	lctx, cancel := context.WithTimeout(run.ctx, prepTimeout)
	defer cancel()
	if _, err := p.conn.LoadSession(lctx, acpsdk.LoadSessionRequest{
		SessionId: acpsdk.SessionId(rec.SessionID), Cwd: directories[0], McpServers: []acpsdk.McpServer{},
	}); err != nil {
		return nil, fmt.Errorf("read %s conversation %s: session/load: %w", a.opts.Name, conversationID, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replay = nil
	if rp.dropped > 0 {
		c.log.Warn("acp replay longer than kept; oldest turns dropped", "dropped", rp.dropped)
	}
	return rp.result(), nil
}

var _ agent.TranscriptReader = (*Agent)(nil)
