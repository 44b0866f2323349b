package turns

import (
	"encoding/json"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// Event takes one event of conversation conv and turns it into chat
// actions. An event for a turn that has ended is dropped: an ended turn
// takes no more results (C-TURN-15, 16).
func (e *Engine) Event(conv agent.Conversation, ev agent.Event) {
	switch ev.Kind {
	case agent.EventExited:
		err := ev.Err
		if err == nil {
			err = fmt.Errorf("agent process exited")
		}
		e.ConversationGone(conv, agent.End{Outcome: agent.OutcomeError, ErrorType: "agentExited", Message: err.Error()})
		return
	case agent.EventSteeringConsumed:
		e.steeringConsumed(ev.SteeringID)
		return
	case agent.EventSteeringReturned:
		e.steeringReturned(ev.TurnID, ev.SteeringID)
		return
	case agent.EventTurnStarted:
		e.backendTurnStarted(conv, ev)
		return
	}
	t := e.active
	if t == nil || !t.on(conv) || ev.TurnID != t.ID {
		if ev.Kind == agent.EventTurnEnd {
			// The backend is done with a turn the host had ended (a stop):
			// the point it names is kept, and the turn waiting for it goes
			// out now.
			if ev.End != nil && ev.End.Point != "" {
				e.host.Point(ev.TurnID, ev.End.Point)
			}
			e.backendEnded(conv, ev.TurnID)
		}
		return
	}
	e.turnEvent(t, conv, ev)
	if e.active == t {
		// Steering is handed again on each of the turn's actions until the
		// backend takes it (C-TURN-42).
		e.handSteering()
	}
}

// turnEvent maps an event of the running turn onto actions.
func (e *Engine) turnEvent(t *Active, conv agent.Conversation, ev agent.Event) {
	switch ev.Kind {
	case agent.EventText:
		e.stream(t, ev, ahp.PartMarkdown, &t.mdPart)
	case agent.EventReasoning:
		e.stream(t, ev, ahp.PartReasoning, &t.rsPart)
	case agent.EventToolStart:
		tc := ev.ToolCall
		if tc == nil || tc.ID == "" || t.tools[tc.ID] {
			return
		}
		t.tools[tc.ID] = true
		if tc.Client != "" {
			if t.clientRun == nil {
				t.clientRun = map[string]bool{}
			}
			t.clientRun[tc.ID] = true
		}
		t.lastKind = ahp.PartToolCall
		e.Apply(ToolStart(t.ID, tc), nil)
	case agent.EventToolInput:
		tc := ev.ToolCall
		if tc == nil || !t.tools[tc.ID] {
			return
		}
		e.Apply(ahp.ChatToolCallDelta{TurnID: t.ID, ToolCallID: tc.ID, Content: ev.Text}, nil)
	case agent.EventToolReady:
		tc := ev.ToolCall
		if tc == nil {
			return
		}
		if !t.tools[tc.ID] {
			e.turnEvent(t, conv, agent.Event{Kind: agent.EventToolStart, TurnID: t.ID, ToolCall: tc})
		}
		e.Apply(ToolReady(t.ID, tc, tc.NeedsConfirmation), nil)
	case agent.EventToolDone:
		tc := ev.ToolCall
		if tc == nil || !t.tools[tc.ID] {
			return
		}
		res := ToolResult(tc)
		// C-SUB-17: a spawning call's result names its worker chat.
		res.Content = append(res.Content, e.host.SpawnedContent(tc.ID)...)
		e.Apply(ahp.ChatToolCallComplete{TurnID: t.ID, ToolCallID: tc.ID, Result: res}, nil)
	case agent.EventUsage:
		if ev.Usage == nil {
			return
		}
		e.Apply(ahp.ChatUsage{TurnID: t.ID, Usage: UsageInfo(*ev.Usage)}, nil)
	case agent.EventInputRequest:
		a, ok := t.ask(ev.Input)
		if !ok {
			e.host.Warn("input request without an id", "turn", t.ID)
			return
		}
		e.Apply(a, nil)
	case agent.EventNotice:
		t.lastKind = ahp.PartSystemNotification
		e.Apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.SystemNotificationPart(ev.Text, nil)}, nil)
	case agent.EventTurnEnd:
		end := agent.End{Outcome: agent.OutcomeComplete}
		if ev.End != nil {
			end = *ev.End
		}
		e.backendEnded(conv, t.ID)
		if h := e.handed; h.id != "" && h.turnID == t.ID && end.Outcome == agent.OutcomeError {
			// A turn that fails takes the steering message it holds with it
			// (C-TURN-67): the chat no longer shows it pending.
			e.handed = handed{}
			e.takeOutSteering(h.id)
		}
		e.endTurn(end)
	}
}

// stream says text or reasoning: it continues the open part of its kind
// (chat/delta, chat/reasoning) while nothing else came between and the
// backend names no other part; otherwise it opens a part.
func (e *Engine) stream(t *Active, ev agent.Event, kind string, open *string) {
	if ev.Text == "" {
		return
	}
	if t.lastKind == kind && (ev.PartID == "" || ev.PartID == *open) {
		if kind == ahp.PartMarkdown {
			e.Apply(ahp.ChatDelta{TurnID: t.ID, PartID: *open, Content: ev.Text}, nil)
		} else {
			e.Apply(ahp.ChatReasoning{TurnID: t.ID, PartID: *open, Content: ev.Text}, nil)
		}
		return
	}
	t.lastKind = kind
	if kind == ahp.PartMarkdown {
		*open = t.partID(ev.PartID, "md")
		e.Apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.MarkdownPart(*open, ev.Text)}, nil)
	} else {
		*open = t.partID(ev.PartID, "rs")
		e.Apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.ReasoningPart(*open, ev.Text)}, nil)
	}
}

// ToolStart is chat/toolCallStart for call tc of turn turnID: named by its
// display name, else its tool's.
func ToolStart(turnID string, tc *agent.ToolCall) ahp.ChatToolCallStart {
	name := tc.DisplayName
	if name == "" {
		name = tc.Name
	}
	a := ahp.ChatToolCallStart{TurnID: turnID, ToolCallID: tc.ID, ToolName: tc.Name, DisplayName: name}
	if tc.Client != "" {
		// A client's own tool: that client runs it (C-SUB-14).
		a.Contributor = &ahp.ToolCallContributor{Kind: ahp.ContributorClient, ClientID: tc.Client}
	}
	return a
}

// ToolReady is chat/toolCallReady for call tc, with its full input; a call
// that needs no confirmation says so.
func ToolReady(turnID string, tc *agent.ToolCall, needsConfirmation bool) ahp.ChatToolCallReady {
	a := ahp.ChatToolCallReady{TurnID: turnID, ToolCallID: tc.ID}
	inv := tc.Invocation
	if inv == "" {
		inv = tc.Name
	}
	a.InvocationMessage = ahp.Plain(inv)
	if tc.Input != "" {
		a.ToolInput = ahp.ToolInputString(tc.Input)
	}
	if !needsConfirmation {
		a.Confirmed = ahp.ConfirmedNotNeeded
	}
	return a
}

// ToolResult is the result of finished call tc: its output and error.
func ToolResult(tc *agent.ToolCall) ahp.ToolCallResult {
	res := ahp.ToolCallResult{Success: tc.Success}
	if tc.PastTense != "" {
		res.PastTenseMessage = ahp.Plain(tc.PastTense)
	}
	if tc.Terminal != "" {
		res.Content = append(res.Content, ahp.ToolResultContent{Type: ahp.ContentTerminal, Resource: tc.Terminal, Title: tc.TerminalTitle})
	}
	if tc.Output != "" {
		res.Content = append(res.Content, ahp.TextContent(tc.Output))
	}
	if tc.Error != "" {
		res.Error = errorJSON(tc.Error)
	}
	return res
}

func (t *Active) partID(want, prefix string) string {
	if want != "" {
		return want
	}
	t.nextPart++
	return fmt.Sprintf("%s-%s-%d", t.ID, prefix, t.nextPart)
}

// errorJSON is a tool result's error object carrying msg.
func errorJSON(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return b
}

// UsageInfo is a backend's usage as AHP carries it. AHP's UsageInfo has
// no cost: it travels in _meta (ahp.MetaCost), where a client that knows
// the key shows it (the web console does).
func UsageInfo(u agent.Usage) ahp.UsageInfo {
	info := ahp.UsageInfo{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens), Model: u.Model}
	if u.CacheRead > 0 {
		n := int64(u.CacheRead)
		info.CacheReadTokens = &n
	}
	if c := u.Cost; c != nil {
		info.Meta = map[string]any{ahp.MetaCost: map[string]any{"amount": c.Amount, "currency": c.Currency}}
	}
	return info
}
