package claude

import (
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

// taskCall is the model's Task call, as a whole assistant line.
func taskCall(uuid, toolID, parent, prompt string) map[string]any {
	var p any
	if parent != "" {
		p = parent
	}
	return map[string]any{"type": "assistant", "uuid": uuid, "parent_tool_use_id": p, "message": map[string]any{"id": "m-" + uuid, "role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": toolID, "name": "Task", "input": map[string]any{
			"description": "look around", "prompt": prompt, "subagent_type": "general-purpose"}}}}}
}

// A Task call spawns a worker: the subagent's lines (parent_tool_use_id =
// the call) are the worker's events, a nested Task call is in the worker
// that made it, and the call's result ends the worker (C-SUB-01, 18).
func TestSubagentLinesAreWorkerEvents(t *testing.T) {
	s := newScripted(t, "")
	s.send("t1", "delegate")
	uuids := frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "delegate"))
	s.feed(taskCall("a1", "toolu_task", "", "find the bug"))
	sub := map[string]any{"type": "assistant", "uuid": "s1", "parent_tool_use_id": "toolu_task", "message": map[string]any{"id": "ms1", "role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": "looking"}}}}
	s.feed(sub)
	s.feed(taskCall("s2", "toolu_nested", "toolu_task", "look deeper"))
	nestedText := map[string]any{"type": "assistant", "uuid": "n1", "parent_tool_use_id": "toolu_nested", "message": map[string]any{"id": "mn1", "role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": "deeper"}}}}
	s.feed(nestedText)
	nestedDone := toolResultLine("s3", "toolu_nested", "deep answer")
	nestedDone["parent_tool_use_id"] = "toolu_task"
	s.feed(nestedDone)
	s.feed(toolResultLine("u1", "toolu_task", "the bug is here"))
	s.feed(answer("m1", "a2", "done")...)
	s.feed(result("success", false, "done"))
	evs := s.drain()

	type want struct {
		kind   agent.EventKind
		worker string
		id     string
	}
	var got []want
	for _, ev := range evs {
		w := want{kind: ev.Kind, worker: ev.Worker}
		switch {
		case ev.Spawn != nil:
			w.id = ev.Spawn.ID
		case ev.ToolCall != nil:
			w.id = ev.ToolCall.ID
		case ev.Kind == agent.EventText:
			w.id = ev.Text
		}
		if ev.TurnID != "t1" {
			t.Errorf("event %v of turn %q", ev.Kind, ev.TurnID)
		}
		got = append(got, w)
	}
	wantSeq := []want{
		{agent.EventToolStart, "", "toolu_task"},
		{agent.EventToolReady, "", "toolu_task"},
		{agent.EventWorkerStarted, "", "toolu_task"},
		{agent.EventText, "toolu_task", "looking"},
		{agent.EventToolStart, "toolu_task", "toolu_nested"},
		{agent.EventToolReady, "toolu_task", "toolu_nested"},
		{agent.EventWorkerStarted, "toolu_task", "toolu_nested"},
		{agent.EventText, "toolu_nested", "deeper"},
		{agent.EventWorkerEnded, "", "toolu_nested"},
		{agent.EventToolDone, "toolu_task", "toolu_nested"},
		{agent.EventWorkerEnded, "", "toolu_task"},
		{agent.EventToolDone, "", "toolu_task"},
		{agent.EventText, "", "done"},
		{agent.EventUsage, "", ""},
		{agent.EventTurnEnd, "", ""},
	}
	if len(got) != len(wantSeq) {
		t.Fatalf("events %+v", got)
	}
	for i := range got {
		if got[i] != wantSeq[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], wantSeq[i])
		}
	}
	for _, ev := range evs {
		if ev.Kind == agent.EventWorkerStarted && ev.Spawn.ID == "toolu_task" {
			if ev.Spawn.Prompt != "find the bug" || ev.Spawn.AgentName != "general-purpose" || ev.Spawn.Description != "look around" {
				t.Errorf("spawn %+v", ev.Spawn)
			}
		}
	}
}
