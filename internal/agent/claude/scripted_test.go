package claude

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// These tests feed the conversation stdout lines shaped as the CLI prints
// them (see the backends reference README) and read what it writes back,
// with no process: they cover the cases the fake model cannot make the
// real CLI produce on cue.

type scripted struct {
	t        *testing.T
	c        *conversation
	p        *process
	exitOnce sync.Once
}

func newScripted(t *testing.T, stopEnds string) *scripted {
	t.Helper()
	opts, err := Options{StopEnds: stopEnds}.with(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newConversation(opts, "claude-not-run", agent.OpenParams{
		ConversationID: "sess", Directories: []string{t.TempDir()}, Logger: testLogger(t),
	})
	p := agentproc.Scripted(agentproc.Spec{Name: "claude", Log: discardLogger})
	c.proc = p
	s := &scripted{t: t, c: c, p: p}
	t.Cleanup(func() {
		s.exit()
		_ = c.Close()
	})
	return s
}

// exit makes the stand-in process count as gone.
func (s *scripted) exit() { s.exitOnce.Do(func() { s.p.Reap() }) }

// written decodes the stdin lines written since the last call.
func (s *scripted) written() []map[string]any {
	var out []map[string]any
	for _, line := range s.p.Written() {
		if line == nil {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			s.t.Fatalf("wrote %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// feed hands the conversation stdout lines.
func (s *scripted) feed(lines ...map[string]any) {
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			s.t.Fatal(err)
		}
		s.c.handleLine(s.p, b)
	}
}

// drain returns the events reported so far: it queues a marker behind them
// and reads up to it.
func (s *scripted) drain() []agent.Event {
	s.t.Helper()
	s.c.events.push(agent.Event{Text: "marker"})
	var out []agent.Event
	deadline := time.After(waitFor)
	for {
		select {
		case ev := <-s.c.Events():
			if ev.Kind == 0 && ev.Text == "marker" {
				return out
			}
			out = append(out, ev)
		case <-deadline:
			s.t.Fatal("events not delivered")
		}
	}
}

func (s *scripted) send(id, text string) {
	s.t.Helper()
	if err := s.c.Send(s.t.Context(), agent.Turn{ID: id, Text: text}); err != nil {
		s.t.Fatal(err)
	}
}

func stream(ev map[string]any) map[string]any {
	return map[string]any{"type": "stream_event", "event": ev, "parent_tool_use_id": nil}
}

func initLine() map[string]any {
	return map[string]any{"type": "system", "subtype": "init", "session_id": "sess", "model": "claude-test"}
}

// answer is a streamed text answer: stream events and the assistant line.
func answer(msgID, uuid, text string) []map[string]any {
	return []map[string]any{
		stream(map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "model": "claude-test",
			"usage": map[string]any{"input_tokens": 5}}}),
		stream(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
		stream(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}}),
		{"type": "assistant", "uuid": uuid, "parent_tool_use_id": nil, "message": map[string]any{"id": msgID, "role": "assistant",
			"model": "claude-test", "content": []any{map[string]any{"type": "text", "text": text}}}},
		stream(map[string]any{"type": "content_block_stop", "index": 0}),
		stream(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": 3}}),
		stream(map[string]any{"type": "message_stop"}),
	}
}

// toolCall is a streamed Bash tool call.
func toolCall(msgID, uuid, toolID, command string) []map[string]any {
	input := map[string]any{"command": command}
	js, _ := json.Marshal(input)
	return []map[string]any{
		stream(map[string]any{"type": "message_start", "message": map[string]any{"id": msgID}}),
		stream(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": map[string]any{}}}),
		stream(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js)}}),
		{"type": "assistant", "uuid": uuid, "parent_tool_use_id": nil, "message": map[string]any{"id": msgID, "role": "assistant",
			"content": []any{map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": input}}}},
		stream(map[string]any{"type": "content_block_stop", "index": 0}),
	}
}

func toolResultLine(uuid, toolID, output string) map[string]any {
	return map[string]any{"type": "user", "uuid": uuid, "parent_tool_use_id": nil, "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolID, "content": output, "is_error": false}}}}
}

func replay(uuid, text string) map[string]any {
	return map[string]any{"type": "user", "uuid": uuid, "isReplay": true, "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": text}}
}

func result(subtype string, isError bool, text string) map[string]any {
	return map[string]any{"type": "result", "subtype": subtype, "is_error": isError, "result": text}
}

// frameUUIDs are the uuids of the user frames among lines written.
func frameUUIDs(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		if l["type"] == "user" {
			out = append(out, l["uuid"].(string))
		}
	}
	return out
}

func kinds(evs []agent.Event) []agent.EventKind {
	var out []agent.EventKind
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

// C-TURN-67, C-TURN-68: a turn that fails takes the steering message it
// holds with it: the CLI's answer to it goes nowhere and no turn opens.
// C-TURN-78: a turn sent meanwhile waits until the CLI has answered it.
func TestFailedTurnTakesItsSteering(t *testing.T) {
	s := newScripted(t, "")
	s.send("t1", "first")
	if r := s.c.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "steer"}); r != agent.SteerTaken {
		t.Fatalf("steer %v", r)
	}
	uuids := frameUUIDs(s.written())
	if len(uuids) != 2 {
		t.Fatalf("frames written %v", uuids)
	}
	s.feed(initLine(), replay(uuids[0], "first"))
	s.feed(map[string]any{"type": "assistant", "uuid": "err-1", "error": "server_error", "parent_tool_use_id": nil,
		"message": map[string]any{"id": "x", "model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": "API Error: 500"}}}})
	s.feed(map[string]any{"type": "result", "subtype": "success", "is_error": true, "api_error_status": 500, "result": "API Error: 500 boom"})
	evs := s.drain()
	if len(evs) != 1 || evs[0].Kind != agent.EventTurnEnd || evs[0].End.Outcome != agent.OutcomeError ||
		evs[0].End.Message != "API Error: 500 boom" || evs[0].End.ErrorType != "api_error" || evs[0].End.Point != "err-1" {
		t.Fatalf("events %v", evs)
	}

	s.send("t2", "second")
	if w := s.written(); len(w) != 0 {
		t.Fatalf("t2 written while the CLI owes an answer: %v", w)
	}
	s.feed(initLine(), replay(uuids[1], "steer"))
	s.feed(answer("m2", "a2", "answer to the steering")...)
	s.feed(result("success", false, "answer to the steering"))
	w := s.written()
	if len(w) != 1 || w[0]["message"].(map[string]any)["content"] != "second" {
		t.Fatalf("after the steering's answer wrote %v", w)
	}
	for _, ev := range s.drain() {
		t.Errorf("the failed turn's steering reported %s", describe(ev))
	}
}

// C-TURN-17: the CLI's answer, after the stop, to the call it was
// interrupted in is sent to no client.
func TestStoppedCallsLateResultGoesNowhere(t *testing.T) {
	s := newScripted(t, "")
	s.send("t1", "run it")
	uuids := frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "run it"))
	s.feed(toolCall("m1", "a1", "toolu_1", "sleep 10")...)
	if err := s.c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := s.written()
	if len(w) != 1 || w[0]["type"] != "control_request" || w[0]["request"].(map[string]any)["subtype"] != "interrupt" {
		t.Fatalf("stop wrote %v", w)
	}
	s.feed(map[string]any{"type": "user", "uuid": "i1", "parent_tool_use_id": nil, "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user for tool use]"}}}})
	s.feed(result("error_during_execution", true, ""))
	evs := s.drain()
	last := evs[len(evs)-1]
	if last.Kind != agent.EventTurnEnd || last.End.Outcome != agent.OutcomeCancelled || last.End.Point != "i1" {
		t.Fatalf("stopped turn ended %s", describe(last))
	}
	// The call's result arrives late, first with nothing running, then
	// while the next turn runs.
	s.feed(toolResultLine("r1", "toolu_1", "slept"))
	s.send("t2", "next")
	uuids = frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "next"))
	s.feed(toolResultLine("r2", "toolu_1", "slept"))
	for _, ev := range s.drain() {
		if ev.Kind == agent.EventToolDone {
			t.Errorf("late result reported: %s", describe(ev))
		}
	}
}

// A permission ask that arrives after a stop is denied at once; one
// pending at the stop is denied before the interrupt.
func TestStopDeniesPermissionAsks(t *testing.T) {
	s := newScripted(t, "")
	s.send("t1", "touch it")
	uuids := frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "touch it"))
	s.feed(toolCall("m1", "a1", "toolu_1", "touch x")...)
	s.feed(map[string]any{"type": "control_request", "request_id": "perm-1", "request": map[string]any{
		"subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash", "input": map[string]any{"command": "touch x"}, "tool_use_id": "toolu_1"}})
	evs := s.drain()
	last := evs[len(evs)-1]
	if last.Kind != agent.EventToolReady || !last.ToolCall.NeedsConfirmation || last.ToolCall.ID != "toolu_1" {
		t.Fatalf("ask reported as %s", describe(last))
	}
	if err := s.c.Confirm("other-turn", "toolu_1", true); err == nil {
		t.Error("confirmed from another turn")
	}
	if err := s.c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := s.written()
	if len(w) != 2 || w[0]["type"] != "control_response" || w[1]["type"] != "control_request" {
		t.Fatalf("stop wrote %v", w)
	}
	resp := w[0]["response"].(map[string]any)
	if resp["request_id"] != "perm-1" || resp["response"].(map[string]any)["behavior"] != "deny" {
		t.Errorf("pending ask answered %v", resp)
	}
	if err := s.c.Confirm("t1", "toolu_1", true); err == nil {
		t.Error("confirmed a call the stop denied")
	}
	s.feed(map[string]any{"type": "control_request", "request_id": "perm-2", "request": map[string]any{
		"subtype": "can_use_tool", "tool_name": "Bash", "input": map[string]any{}, "tool_use_id": "toolu_2"}})
	w = s.written()
	if len(w) != 1 || w[0]["response"].(map[string]any)["request_id"] != "perm-2" ||
		w[0]["response"].(map[string]any)["response"].(map[string]any)["behavior"] != "deny" {
		t.Errorf("ask after the stop answered %v", w)
	}
}

// C-TURN-76: with stopEnds query the stop ends the process; a steering
// message the CLI had not taken goes back to the host.
func TestStopEndsQueryReturnsSteering(t *testing.T) {
	s := newScripted(t, StopEndsQuery)
	s.exit() // the retired stand-in is gone at once
	s.send("t1", "slow")
	if r := s.c.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "steer"}); r != agent.SteerTaken {
		t.Fatalf("steer %v", r)
	}
	uuids := frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "slow"))
	if err := s.c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.feed(result("error_during_execution", true, ""))
	evs := s.drain()
	if got := kinds(evs); len(got) != 2 || got[0] != agent.EventTurnEnd || got[1] != agent.EventSteeringReturned {
		t.Fatalf("events %v", evs)
	}
	if evs[1].SteeringID != "s1" || evs[1].TurnID != "t1" {
		t.Errorf("returned %s", describe(evs[1]))
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.proc != nil || len(s.c.frames) != 0 {
		t.Errorf("process %v, frames %d after the stop", s.c.proc, len(s.c.frames))
	}
}

// A stop the CLI never answers ends the turn cancelled anyway and replaces
// the process.
func TestStopOverdue(t *testing.T) {
	s := newScripted(t, "")
	s.exit()
	s.c.stopWait, s.c.stopAckWait = time.Millisecond, time.Millisecond
	s.send("t1", "hang")
	if err := s.c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(waitFor)
	for {
		select {
		case ev := <-s.c.Events():
			if ev.Kind == agent.EventTurnEnd {
				if ev.TurnID != "t1" || ev.End.Outcome != agent.OutcomeCancelled {
					t.Errorf("ended %s", describe(ev))
				}
				s.c.mu.Lock()
				defer s.c.mu.Unlock()
				if s.c.proc != nil {
					t.Error("the stuck process was kept")
				}
				return
			}
		case <-deadline:
			t.Fatal("the stuck turn never ended")
		}
	}
}

func TestCompactionIsANotice(t *testing.T) {
	s := newScripted(t, "")
	s.send("t1", "long")
	uuids := frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "long"))
	s.feed(map[string]any{"type": "system", "subtype": "compact_boundary", "compact_metadata": map[string]any{
		"trigger": "auto", "pre_tokens": 180000, "post_tokens": 12000}})
	evs := s.drain()
	if len(evs) != 1 || evs[0].Kind != agent.EventNotice || evs[0].TurnID != "t1" ||
		evs[0].Text != "Conversation compacted (auto): 180000 tokens before, 12000 after." {
		t.Errorf("events %v", evs)
	}
}

// A subagent's messages (parent_tool_use_id set) stay out of the turn.
func TestSubagentLinesAreLeftOut(t *testing.T) {
	s := newScripted(t, "")
	s.send("t1", "delegate")
	uuids := frameUUIDs(s.written())
	s.feed(initLine(), replay(uuids[0], "delegate"))
	for _, l := range answer("m9", "sub-1", "subagent text") {
		l["parent_tool_use_id"] = "toolu_task"
		s.feed(l)
	}
	if evs := s.drain(); len(evs) != 0 {
		t.Errorf("subagent lines reported %v", evs)
	}
	s.feed(answer("m1", "a1", "main text")...)
	s.feed(result("success", false, "main text"))
	evs := s.drain()
	if got := kinds(evs); len(got) != 3 || got[0] != agent.EventText || got[1] != agent.EventUsage || got[2] != agent.EventTurnEnd {
		t.Errorf("events %v", evs)
	}
	if u := evs[1].Usage; u.InputTokens != 5 || u.OutputTokens != 3 || u.Model != "claude-test" {
		t.Errorf("usage %+v", u)
	}
	if evs[2].End.Point != "a1" {
		t.Errorf("point %s", evs[2].End.Point)
	}
}
