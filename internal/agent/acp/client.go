package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
)

// procClient is the client side one agent process talks to. What a
// process that is no longer the conversation's says is ignored.
type procClient struct {
	c *conversation
	// p is set before ready is closed; handlers wait for it.
	p     *process
	ready chan struct{}
}

// current reports whether pc's process is the conversation's. c.mu must
// be held.
func (pc *procClient) currentLocked() bool { return pc.c.proc == pc.p }

// SessionUpdate maps one session/update to chat events: text and thought
// chunks to parts, tool calls with their status, content and locations,
// plans to a notice showing them, usage; mode, config and command updates
// are kept. During a session/load the updates are the replayed history.
func (pc *procClient) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	<-pc.ready
	defer pc.p.guard.handled()
	c := pc.c
	c.emit(func() []agent.Event {
		if !pc.currentLocked() {
			return nil
		}
		u := n.Update
		if c.replay != nil {
			c.replay.add(u)
			return nil
		}
		c.keepSessionLocked(u)
		run := c.running
		if run == nil || run.ended || !run.promptSent || string(n.SessionId) != c.sessionID {
			if u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil || u.ToolCall != nil || u.ToolCallUpdate != nil {
				// C-TURN-17: what comes after a turn ended reaches no client.
				c.log.Debug("acp update outside a running turn not shown", "session", n.SessionId)
			}
			return nil
		}
		return c.turnEventsLocked(run, u)
	})
	return nil
}

// keepSessionLocked keeps what an update says of the session. c.mu must be
// held.
func (c *conversation) keepSessionLocked(u acpsdk.SessionUpdate) {
	switch {
	case u.CurrentModeUpdate != nil:
		c.mode = string(u.CurrentModeUpdate.CurrentModeId)
	case u.ConfigOptionUpdate != nil:
		c.keepConfigLocked(u.ConfigOptionUpdate.ConfigOptions)
		if ms := modelsOf(u.ConfigOptionUpdate.ConfigOptions, nil); len(ms) > 0 {
			c.a.learn(func(l *learned) { l.Models = ms })
		}
	case u.AvailableCommandsUpdate != nil:
		cmds := make([]agent.Command, 0, len(u.AvailableCommandsUpdate.AvailableCommands))
		for _, ac := range u.AvailableCommandsUpdate.AvailableCommands {
			cmds = append(cmds, agent.Command{Name: ac.Name, Description: ac.Description})
		}
		c.a.learn(func(l *learned) { l.Commands = cmds })
	case u.SessionInfoUpdate != nil:
		if t := u.SessionInfoUpdate.Title; t != nil {
			c.title = *t
		}
	}
}

// turnEventsLocked maps an update of the running turn. c.mu must be held.
func (c *conversation) turnEventsLocked(run *turnRun, u acpsdk.SessionUpdate) []agent.Event {
	switch {
	case u.AgentMessageChunk != nil:
		return []agent.Event{{Kind: agent.EventText, TurnID: run.id, PartID: partID(u.AgentMessageChunk.MessageId), Text: blockText(u.AgentMessageChunk.Content)}}
	case u.AgentThoughtChunk != nil:
		return []agent.Event{{Kind: agent.EventReasoning, TurnID: run.id, PartID: partID(u.AgentThoughtChunk.MessageId), Text: blockText(u.AgentThoughtChunk.Content)}}
	case u.ToolCall != nil:
		tc := u.ToolCall
		return c.toolEventsLocked(run, acpsdk.ToolCallUpdate{
			ToolCallId: tc.ToolCallId, Title: &tc.Title, Kind: &tc.Kind, Status: &tc.Status,
			Content: tc.Content, Locations: tc.Locations, RawInput: tc.RawInput, RawOutput: tc.RawOutput,
		})
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		return c.toolEventsLocked(run, acpsdk.ToolCallUpdate{
			ToolCallId: tu.ToolCallId, Title: tu.Title, Kind: tu.Kind, Status: tu.Status,
			Content: tu.Content, Locations: tu.Locations, RawInput: tu.RawInput, RawOutput: tu.RawOutput,
		})
	case u.Plan != nil:
		return []agent.Event{{Kind: agent.EventNotice, TurnID: run.id, Text: planText(u.Plan.Entries)}}
	case u.UsageUpdate != nil:
		// The context window in use; the prompt's answer carries the
		// turn's own token counts, which replace it at the end.
		uu := agent.Usage{InputTokens: u.UsageUpdate.Used, OutputTokens: run.usage.OutputTokens}
		return []agent.Event{{Kind: agent.EventUsage, TurnID: run.id, Usage: &uu}}
	}
	return nil
}

func partID(messageID *string) string {
	if messageID == nil {
		return ""
	}
	return *messageID
}

// toolEventsLocked folds a tool_call or tool_call_update (or the tool call
// of a permission request) into the call's state and reports what is new:
// its start, its input once known, its end. c.mu must be held.
func (c *conversation) toolEventsLocked(run *turnRun, u acpsdk.ToolCallUpdate) []agent.Event {
	var evs []agent.Event
	ts := run.tools[u.ToolCallId]
	if ts == nil {
		ts = &toolState{name: "tool"}
		run.tools[u.ToolCallId] = ts
		if u.Kind != nil && *u.Kind != "" {
			ts.name = string(*u.Kind)
		}
		if u.Title != nil {
			ts.title = *u.Title
		}
		evs = append(evs, agent.Event{Kind: agent.EventToolStart, TurnID: run.id,
			ToolCall: &agent.ToolCall{ID: string(u.ToolCallId), Name: ts.name, DisplayName: ts.display()}})
	}
	if u.Title != nil && *u.Title != "" {
		ts.title = *u.Title
	}
	if len(u.Locations) > 0 {
		ts.locations = u.Locations
	}
	if u.RawInput != nil {
		if b, err := json.Marshal(u.RawInput); err == nil {
			ts.input = string(b)
		}
	}
	status := acpsdk.ToolCallStatus("")
	if u.Status != nil {
		status = *u.Status
	}
	if !ts.ready && (u.RawInput != nil || status == acpsdk.ToolCallStatusInProgress ||
		status == acpsdk.ToolCallStatusCompleted || status == acpsdk.ToolCallStatusFailed) {
		ts.ready = true
		evs = append(evs, agent.Event{Kind: agent.EventToolReady, TurnID: run.id, ToolCall: ts.call(u.ToolCallId)})
	}
	if !ts.done && (status == acpsdk.ToolCallStatusCompleted || status == acpsdk.ToolCallStatusFailed) {
		ts.done = true
		call := ts.call(u.ToolCallId)
		out := c.toolOutput(u.Content, u.RawOutput)
		if status == acpsdk.ToolCallStatusCompleted {
			call.Success, call.Output, call.PastTense = true, out, ts.display()
		} else {
			call.Error = out
			if call.Error == "" {
				call.Error = "the tool call failed"
			}
		}
		evs = append(evs, agent.Event{Kind: agent.EventToolDone, TurnID: run.id, ToolCall: call})
	}
	return evs
}

func (ts *toolState) display() string {
	if ts.title != "" {
		return ts.title
	}
	return ts.name
}

func (ts *toolState) call(id acpsdk.ToolCallId) *agent.ToolCall {
	input := ts.input
	if input == "" {
		input = "{}"
	}
	inv := ts.display()
	if len(ts.locations) > 0 {
		var locs []string
		for _, l := range ts.locations {
			if l.Line != nil {
				locs = append(locs, fmt.Sprintf("%s:%d", l.Path, *l.Line))
			} else {
				locs = append(locs, l.Path)
			}
		}
		inv += " (" + strings.Join(locs, ", ") + ")"
	}
	tc := &agent.ToolCall{ID: string(id), Name: ts.name, DisplayName: ts.display(), Input: input, Invocation: inv}
	for _, l := range ts.locations {
		tc.Paths = append(tc.Paths, l.Path)
	}
	return tc
}

// toolOutput is a tool call's content as text: its text blocks, its diffs
// named by path, its terminals' output; else its raw output.
func (c *conversation) toolOutput(content []acpsdk.ToolCallContent, raw any) string {
	var parts []string
	for _, tc := range content {
		switch {
		case tc.Content != nil:
			parts = append(parts, blockText(tc.Content.Content))
		case tc.Diff != nil:
			parts = append(parts, "edited "+tc.Diff.Path)
		case tc.Terminal != nil:
			parts = append(parts, c.terms.outputOf(tc.Terminal.TerminalId))
		}
	}
	if len(parts) == 0 && raw != nil {
		if s, ok := raw.(string); ok {
			return s
		}
		if b, err := json.Marshal(raw); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// blockText is a content block as markdown.
func blockText(b acpsdk.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.Uri)
	case b.Resource != nil:
		if t := b.Resource.Resource.TextResourceContents; t != nil {
			return t.Text
		}
		return "[resource]"
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	}
	return ""
}

// planText shows a plan as a checklist.
func planText(entries []acpsdk.PlanEntry) string {
	var b strings.Builder
	b.WriteString("Plan:")
	for _, e := range entries {
		mark := " "
		switch e.Status {
		case acpsdk.PlanEntryStatusCompleted:
			mark = "x"
		case acpsdk.PlanEntryStatusInProgress:
			mark = "~"
		}
		fmt.Fprintf(&b, "\n- [%s] %s", mark, e.Content)
	}
	return b.String()
}

// RequestPermission makes the request's tool call one that waits for
// confirmation, answered by Confirm; a stop, a close or the turn's end
// answers it cancelled, as does a request outside a running turn.
func (pc *procClient) RequestPermission(ctx context.Context, req acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	<-pc.ready
	c := pc.c
	cancelled := acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}
	var perm *permission
	c.emit(func() []agent.Event {
		run := c.running
		if !pc.currentLocked() || c.closed || run == nil || run.ended || run.stopping || !run.promptSent {
			return nil
		}
		id := req.ToolCall.ToolCallId
		if old := c.perms[id]; old != nil {
			old.answer <- acpsdk.NewRequestPermissionOutcomeCancelled()
		}
		perm = &permission{turn: run, options: req.Options, answer: make(chan acpsdk.RequestPermissionOutcome, 1)}
		c.perms[id] = perm
		evs := c.toolEventsLocked(run, req.ToolCall)
		ts := run.tools[id]
		if ts.done {
			return evs
		}
		ts.ready = true
		call := ts.call(id)
		call.NeedsConfirmation = true
		return append(evs, agent.Event{Kind: agent.EventToolReady, TurnID: run.id, ToolCall: call})
	})
	if perm == nil {
		return cancelled, nil
	}
	select {
	case o := <-perm.answer:
		return acpsdk.RequestPermissionResponse{Outcome: o}, nil
	case <-ctx.Done():
		c.mu.Lock()
		if c.perms[req.ToolCall.ToolCallId] == perm {
			delete(c.perms, req.ToolCall.ToolCallId)
		}
		c.mu.Unlock()
		return cancelled, nil
	}
}

// ReadTextFile reads a file inside the chat's directories.
func (pc *procClient) ReadTextFile(ctx context.Context, req acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	text, err := readConfined(pc.c.dirs, req.Path, req.Line, req.Limit)
	if err != nil {
		pc.c.log.Info("acp fs/read_text_file refused", "path", req.Path, "err", err)
		return acpsdk.ReadTextFileResponse{}, acpsdk.NewInvalidParams(map[string]any{"path": req.Path, "error": err.Error()})
	}
	return acpsdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile writes a file inside the chat's directories.
func (pc *procClient) WriteTextFile(ctx context.Context, req acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	if err := writeConfined(pc.c.dirs, req.Path, req.Content); err != nil {
		pc.c.log.Info("acp fs/write_text_file refused", "path", req.Path, "err", err)
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewInvalidParams(map[string]any{"path": req.Path, "error": err.Error()})
	}
	return acpsdk.WriteTextFileResponse{}, nil
}

// CreateTerminal runs a command in the chat's first directory (or a
// directory inside the chat's that the request names).
func (pc *procClient) CreateTerminal(ctx context.Context, req acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	id, err := pc.c.terms.create(pc.c.dirs, req, pc.c.a.environ())
	if err != nil {
		pc.c.log.Info("acp terminal/create refused", "command", req.Command, "err", err)
		return acpsdk.CreateTerminalResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return acpsdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (pc *procClient) TerminalOutput(ctx context.Context, req acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return pc.c.terms.output(req.TerminalId)
}

func (pc *procClient) WaitForTerminalExit(ctx context.Context, req acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return pc.c.terms.wait(ctx, req.TerminalId)
}

func (pc *procClient) KillTerminal(ctx context.Context, req acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, pc.c.terms.kill(req.TerminalId)
}

func (pc *procClient) ReleaseTerminal(ctx context.Context, req acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, pc.c.terms.release(req.TerminalId)
}

var _ acpsdk.Client = (*procClient)(nil)
