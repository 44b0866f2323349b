package chat

import (
	"encoding/json"
	"fmt"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// onAgentEvent turns one backend event into chat actions. An event for a
// turn that has ended is dropped: an ended turn takes no more results
// (C-TURN-15, 16).
func (c *Chat) onAgentEvent(ev agent.Event) {
	if c.routeWorkerEvent(ev) {
		return
	}
	switch ev.Kind {
	case agent.EventExited:
		err := ev.Err
		if err == nil {
			err = fmt.Errorf("agent process exited")
		}
		c.log.Warn("agent conversation exited", "err", err)
		c.conversationGone(err)
		return
	case agent.EventSteeringConsumed:
		c.steeringConsumed(ev.SteeringID)
		return
	case agent.EventSteeringReturned:
		c.steeringReturned(ev.TurnID, ev.SteeringID)
		return
	case agent.EventTurnStarted:
		c.backendTurnStarted(ev)
		return
	}
	t := c.turn
	if t == nil || !t.on(c.conv) || ev.TurnID != t.id {
		if ev.Kind == agent.EventTurnEnd {
			// The backend is done with a turn the host had ended (a stop):
			// the point it names is kept, and the turn waiting for it goes
			// out now.
			c.notePoint(ev)
			c.backendEnded(ev.TurnID)
		}
		c.log.Debug("dropped event of an ended turn", "turn", ev.TurnID, "kind", ev.Kind)
		return
	}
	c.applyTurnEvent(t, ev)
	if c.turn == t {
		// Steering is handed again on each of the turn's actions until the
		// backend takes it (C-TURN-42).
		c.handSteering()
	}
}

// applyTurnEvent maps a backend event of the running turn onto actions.
func (c *Chat) applyTurnEvent(t *runningTurn, ev agent.Event) {
	switch ev.Kind {
	case agent.EventText:
		if ev.Text == "" {
			return
		}
		if t.lastKind != ahp.PartMarkdown || (ev.PartID != "" && ev.PartID != t.mdPart) {
			t.mdPart = c.partID(t, ev.PartID, "md")
			t.lastKind = ahp.PartMarkdown
			c.apply(ahp.ChatResponsePart{TurnID: t.id, Part: ahp.MarkdownPart(t.mdPart, ev.Text)}, nil)
			return
		}
		c.apply(ahp.ChatDelta{TurnID: t.id, PartID: t.mdPart, Content: ev.Text}, nil)
	case agent.EventReasoning:
		if ev.Text == "" {
			return
		}
		if t.lastKind != ahp.PartReasoning || (ev.PartID != "" && ev.PartID != t.rsPart) {
			t.rsPart = c.partID(t, ev.PartID, "rs")
			t.lastKind = ahp.PartReasoning
			c.apply(ahp.ChatResponsePart{TurnID: t.id, Part: ahp.ReasoningPart(t.rsPart, ev.Text)}, nil)
			return
		}
		c.apply(ahp.ChatReasoning{TurnID: t.id, PartID: t.rsPart, Content: ev.Text}, nil)
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
		c.apply(ahp.ChatToolCallStart{TurnID: t.id, ToolCallID: tc.ID, ToolName: tc.Name, DisplayName: name}, nil)
	case agent.EventToolInput:
		tc := ev.ToolCall
		if tc == nil || !t.tools[tc.ID] {
			return
		}
		c.apply(ahp.ChatToolCallDelta{TurnID: t.id, ToolCallID: tc.ID, Content: ev.Text}, nil)
	case agent.EventToolReady:
		tc := ev.ToolCall
		if tc == nil {
			return
		}
		if !t.tools[tc.ID] {
			c.applyTurnEvent(t, agent.Event{Kind: agent.EventToolStart, TurnID: t.id, ToolCall: tc})
		}
		a := ahp.ChatToolCallReady{TurnID: t.id, ToolCallID: tc.ID}
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
		c.apply(a, nil)
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
		res.Content = append(res.Content, c.spawnedContent(tc.ID)...)
		if tc.Error != "" {
			res.Error = errorJSON(tc.Error)
		}
		c.apply(ahp.ChatToolCallComplete{TurnID: t.id, ToolCallID: tc.ID, Result: res}, nil)
	case agent.EventUsage:
		if ev.Usage == nil {
			return
		}
		u := ahp.UsageInfo{InputTokens: int64(ev.Usage.InputTokens), OutputTokens: int64(ev.Usage.OutputTokens), Model: ev.Usage.Model}
		if ev.Usage.CacheRead > 0 {
			n := int64(ev.Usage.CacheRead)
			u.CacheReadTokens = &n
		}
		c.apply(ahp.ChatUsage{TurnID: t.id, Usage: u}, nil)
	case agent.EventNotice:
		t.lastKind = ahp.PartSystemNotification
		c.apply(ahp.ChatResponsePart{TurnID: t.id, Part: ahp.SystemNotificationPart(ev.Text, nil)}, nil)
	case agent.EventTurnEnd:
		end := agent.End{Outcome: agent.OutcomeComplete}
		if ev.End != nil {
			end = *ev.End
		}
		if t.conv == c.conv {
			c.backendEnded(t.id)
		}
		if h := c.engine().handed; h.id != "" && h.turnID == t.id && end.Outcome == agent.OutcomeError {
			// A turn that fails takes the steering message it holds with it
			// (C-TURN-67): the chat no longer shows it pending.
			c.engine().handed = handedSteering{}
			c.takeOutSteering(h.id)
		}
		c.endTurn(end)
	}
}

func (c *Chat) partID(t *runningTurn, want, prefix string) string {
	if want != "" {
		return want
	}
	t.nextPart++
	return fmt.Sprintf("%s-%s-%d", t.id, prefix, t.nextPart)
}

func errorJSON(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return b
}
