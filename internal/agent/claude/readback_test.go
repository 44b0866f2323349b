package claude

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

// liveTurn rebuilds a turn as a transcript turn from its events, for
// comparing a live run with its read-back.
func (d *driver) liveTurn(turnID, said string) TranscriptTurn {
	turn := TranscriptTurn{UserText: said}
	index := make(map[string]int) // part id or tool id → index in Parts
	for _, ev := range d.of(turnID) {
		switch ev.Kind {
		case agent.EventText, agent.EventReasoning:
			i, ok := index[ev.PartID]
			if !ok {
				kind := PartMarkdown
				if ev.Kind == agent.EventReasoning {
					kind = PartReasoning
				}
				turn.Parts = append(turn.Parts, TranscriptPart{Kind: kind})
				i = len(turn.Parts) - 1
				index[ev.PartID] = i
			}
			turn.Parts[i].Text += ev.Text
		case agent.EventToolStart:
			turn.Parts = append(turn.Parts, TranscriptPart{Kind: PartToolCall, Tool: &agent.ToolCall{
				ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, DisplayName: ev.ToolCall.DisplayName,
			}})
			index[ev.ToolCall.ID] = len(turn.Parts) - 1
		case agent.EventToolReady:
			p := &turn.Parts[index[ev.ToolCall.ID]]
			p.Tool.Input, p.Tool.Invocation = ev.ToolCall.Input, ev.ToolCall.Invocation
		case agent.EventToolDone:
			p := &turn.Parts[index[ev.ToolCall.ID]]
			p.ToolDone = true
			p.Tool.Success, p.Tool.Output, p.Tool.Error, p.Tool.PastTense =
				ev.ToolCall.Success, ev.ToolCall.Output, ev.ToolCall.Error, ev.ToolCall.PastTense
		case agent.EventSteeringConsumed:
			turn.Steering = append(turn.Steering, ev.SteeringID)
		case agent.EventTurnEnd:
			turn.Point = ev.End.Point
			switch ev.End.Outcome {
			case agent.OutcomeComplete:
				turn.State = TurnComplete
			case agent.OutcomeCancelled:
				turn.State = TurnCancelled
			case agent.OutcomeError:
				turn.State, turn.Error = TurnError, ev.End.Message
			}
		}
	}
	return turn
}

// sameTurn compares what a client would be shown.
func sameTurn(live, back TranscriptTurn) string {
	var diffs []string
	if live.UserText != back.UserText {
		diffs = append(diffs, fmt.Sprintf("said %q, read back %q", live.UserText, back.UserText))
	}
	if live.State != back.State {
		diffs = append(diffs, fmt.Sprintf("state %v, read back %v", live.State, back.State))
	}
	if live.Point != back.Point {
		diffs = append(diffs, fmt.Sprintf("point %s, read back %s", live.Point, back.Point))
	}
	if len(live.Steering) != len(back.Steering) {
		diffs = append(diffs, fmt.Sprintf("steering %q, read back %q", live.Steering, back.Steering))
	}
	if len(live.Parts) != len(back.Parts) {
		diffs = append(diffs, fmt.Sprintf("parts %s, read back %s", partsString(live.Parts), partsString(back.Parts)))
	} else {
		for i := range live.Parts {
			if a, b := partsString(live.Parts[i:i+1]), partsString(back.Parts[i:i+1]); a != b {
				diffs = append(diffs, fmt.Sprintf("part %d: %s, read back %s", i, a, b))
			}
		}
	}
	return strings.Join(diffs, "; ")
}

func partsString(parts []TranscriptPart) string {
	var out []string
	for _, p := range parts {
		if p.Kind == PartToolCall {
			tc := p.Tool
			out = append(out, fmt.Sprintf("tool{%s %s in=%s inv=%q done=%v ok=%v out=%q err=%q past=%q}",
				tc.ID, tc.Name, tc.Input, tc.Invocation, p.ToolDone, tc.Success, tc.Output, tc.Error, tc.PastTense))
			continue
		}
		out = append(out, fmt.Sprintf("%v{%q}", p.Kind, p.Text))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// A conversation read back from its transcript gives the turns the live
// run gave (C-COMP-07); a steering message run late reads back as a turn of
// its own (C-TURN-112, C-TURN-113), one taken at a tool call stays in its
// turn (C-TURN-114), a stop reads back as a cancelled turn (C-TURN-115) and
// a steering message answered after a stop as its own turn (C-TURN-116).
func TestTranscriptReadsBackTheLiveTurns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()

	type sent struct{ id, said string }
	var turns []sent
	run := func(id, said string) {
		d.complete(id, said)
		turns = append(turns, sent{id, said})
	}
	run("plain", "plain words")
	run("tool", "use a tool [tool]")
	run("think", "ponder [think]")

	d.send("steered", "make a file [bash:touch r.txt]")
	ask := d.until("confirmation", func(ev agent.Event) bool {
		return ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation
	})
	if r := d.conv.Steer(agent.Steering{ID: "s1", TurnID: "steered", Text: "STEER at the tool"}); r != agent.SteerTaken {
		t.Fatalf("steer: %v", r)
	}
	if err := d.conv.Confirm("steered", ask.ToolCall.ID, true); err != nil {
		t.Fatal(err)
	}
	d.end("steered")
	turns = append(turns, sent{"steered", "make a file [bash:touch r.txt]"})

	d.send("stopped", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText && ev.TurnID == "stopped" })
	if err := d.conv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	d.end("stopped")
	turns = append(turns, sent{"stopped", "talk slowly [slow]"})
	run("after", "after the stop")

	d.send("failed", "boom [error]")
	d.end("failed")
	turns = append(turns, sent{"failed", "boom [error]"})

	// One host turn, two CLI prompts: the second reads back on its own.
	d.send("late", "talk slowly again [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText && ev.TurnID == "late" })
	if r := d.conv.Steer(agent.Steering{ID: "s2", TurnID: "late", Text: "late steer"}); r != agent.SteerTaken {
		t.Fatalf("steer: %v", r)
	}
	lateEnd := d.end("late")
	d.close()

	back, err := h.claude.ReadTranscript(d.id, h.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(turns)+2 {
		t.Fatalf("read back %d turns, want %d", len(back), len(turns)+2)
	}
	for i, b := range back {
		t.Logf("read back %d: %q %v steering=%q point=%s %s", i, b.UserText, b.State, b.Steering, b.Point, partsString(b.Parts))
	}
	for i, s := range turns {
		live := d.liveTurn(s.id, s.said)
		if diff := sameTurn(live, back[i]); diff != "" {
			t.Errorf("turn %s: %s", s.id, diff)
		}
	}
	if got := back[3].Steering; len(got) != 1 || got[0] != "STEER at the tool" {
		t.Errorf("steered turn reads back steering %q", got)
	}
	if back[6].State != TurnError || !strings.Contains(back[6].Error, "500") {
		t.Errorf("failed turn reads back %v %q", back[6].State, back[6].Error)
	}

	first, second := back[len(turns)], back[len(turns)+1]
	if first.UserText != "talk slowly again [slow]" || first.State != TurnComplete {
		t.Errorf("late turn's first prompt reads back %q %v", first.UserText, first.State)
	}
	if second.UserText != "late steer" || second.State != TurnComplete || second.Point != lateEnd.Point {
		t.Errorf("late steering reads back %q %v %s (live point %s)", second.UserText, second.State, second.Point, lateEnd.Point)
	}
	if len(second.Parts) != 1 || second.Parts[0].Text != "fake reply: late steer" {
		t.Errorf("late steering's answer reads back %s", partsString(second.Parts))
	}
}

// A steering message the CLI ran after a stop reads back as its own turn
// (C-TURN-116).
func TestTranscriptSteeringAfterStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.send("t1", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText })
	if r := d.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "steer then stop"}); r != agent.SteerTaken {
		t.Fatalf("steer: %v", r)
	}
	if err := d.conv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	d.end("t1")
	started := d.until("turn started", func(ev agent.Event) bool { return ev.Kind == agent.EventTurnStarted })
	end := d.end(started.TurnID)
	d.close()

	back, err := h.claude.ReadTranscript(d.id, h.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 {
		t.Fatalf("read back %d turns", len(back))
	}
	if diff := sameTurn(d.liveTurn("t1", "talk slowly [slow]"), back[0]); diff != "" {
		t.Errorf("stopped turn: %s", diff)
	}
	if diff := sameTurn(d.liveTurn(started.TurnID, "steer then stop"), back[1]); diff != "" {
		t.Errorf("steering turn: %s", diff)
	}
	if back[1].Point != end.Point {
		t.Errorf("steering turn point %s, live %s", back[1].Point, end.Point)
	}
}
