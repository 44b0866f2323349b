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
		if ev.Text == "" {
			return
		}
		if t.lastKind != ahp.PartMarkdown || (ev.PartID != "" && ev.PartID != t.mdPart) {
			t.mdPart = t.partID(ev.PartID, "md")
			t.lastKind = ahp.PartMarkdown
			e.Apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.MarkdownPart(t.mdPart, ev.Text)}, nil)
			return
		}
		e.Apply(ahp.ChatDelta{TurnID: t.ID, PartID: t.mdPart, Content: ev.Text}, nil)
	case agent.EventReasoning:
		if ev.Text == "" {
			return
		}
		if t.lastKind != ahp.PartReasoning || (ev.PartID != "" && ev.PartID != t.rsPart) {
			t.rsPart = t.partID(ev.PartID, "rs")
			t.lastKind = ahp.PartReasoning
			e.Apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.ReasoningPart(t.rsPart, ev.Text)}, nil)
			return
		}
		e.Apply(ahp.ChatReasoning{TurnID: t.ID, PartID: t.rsPart, Content: ev.Text}, nil)
	case agent.EventToolStart:
		tc := ev.ToolCall
		if tc == nil || tc.ID == "" || t.tools[tc.ID] {
			return
		}
		t.tools[tc.ID] = true
		t.lastKind = ahp.PartToolCall
		name := tc.DisplayName
		if name == "" {
			name = tc.Name
		}
		e.Apply(ahp.ChatToolCallStart{TurnID: t.ID, ToolCallID: tc.ID, ToolName: tc.Name, DisplayName: name}, nil)
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
		a := ahp.ChatToolCallReady{TurnID: t.ID, ToolCallID: tc.ID}
		inv := tc.Invocation
		if inv == "" {
			inv = tc.Name
		}
		a.InvocationMessage = ahp.Plain(inv)
		if tc.Input != "" {
			a.ToolInput = ahp.ToolInputString(tc.Input)
		}
		if !tc.NeedsConfirmation {
			a.Confirmed = ahp.ConfirmedNotNeeded
		}
		e.Apply(a, nil)
	case agent.EventToolDone:
		tc := ev.ToolCall
		if tc == nil || !t.tools[tc.ID] {
			return
		}
		res := ahp.ToolCallResult{Success: tc.Success}
		if tc.PastTense != "" {
			res.PastTenseMessage = ahp.Plain(tc.PastTense)
		}
		if tc.Output != "" {
			res.Content = []ahp.ToolResultContent{ahp.TextContent(tc.Output)}
		}
		// C-SUB-17: a spawning call's result names its worker chat.
		res.Content = append(res.Content, e.host.SpawnedContent(tc.ID)...)
		if tc.Error != "" {
			res.Error = ErrorJSON(tc.Error)
		}
		e.Apply(ahp.ChatToolCallComplete{TurnID: t.ID, ToolCallID: tc.ID, Result: res}, nil)
	case agent.EventUsage:
		if ev.Usage == nil {
			return
		}
		u := ahp.UsageInfo{InputTokens: int64(ev.Usage.InputTokens), OutputTokens: int64(ev.Usage.OutputTokens), Model: ev.Usage.Model}
		if ev.Usage.CacheRead > 0 {
			n := int64(ev.Usage.CacheRead)
			u.CacheReadTokens = &n
		}
		e.Apply(ahp.ChatUsage{TurnID: t.ID, Usage: u}, nil)
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

func (t *Active) partID(want, prefix string) string {
	if want != "" {
		return want
	}
	t.nextPart++
	return fmt.Sprintf("%s-%s-%d", t.ID, prefix, t.nextPart)
}

// ErrorJSON is a tool result's error object carrying msg.
func ErrorJSON(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return b
}
