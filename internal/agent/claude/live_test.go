package claude

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

// These tests drive the real claude CLI (testdata/agents, `make agents`)
// against the fake model server; they skip when it is not installed.

func TestTurnStreamsText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	end := d.complete("t1", "hello there")
	if got := d.text("t1"); got != "fake reply: hello there" {
		t.Errorf("text %q", got)
	}
	if n := d.count("t1", agent.EventText); n < 2 {
		t.Errorf("%d text deltas, want the reply streamed in several", n)
	}
	var usage *agent.Usage
	for _, ev := range d.of("t1") {
		if ev.Kind == agent.EventUsage {
			usage = ev.Usage
		}
	}
	if usage == nil || usage.InputTokens == 0 || usage.OutputTokens == 0 {
		t.Errorf("usage %+v", usage)
	}
	// The point names the answer's entry in the transcript.
	d.close()
	turns, err := h.claude.ReadTranscript(d.id, h.cwd)
	if err != nil {
		out, _ := exec.Command("find", h.cfg).CombinedOutput()
		t.Fatalf("%v\n%s", err, out)
	}
	if len(turns) != 1 || turns[0].Point != end.Point {
		t.Errorf("transcript turns %+v, want one ending at %s", turns, end.Point)
	}
}

func TestToolCallWaitsForConfirmation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()

	d.send("t1", "make a file [bash:touch made.txt]")
	ask := d.until("confirmation", func(ev agent.Event) bool {
		return ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation
	})
	tc := ask.ToolCall
	if tc.Name != "Bash" || !strings.Contains(tc.Input, "touch made.txt") || tc.Invocation != "Run `touch made.txt`" {
		t.Errorf("asked about %+v", tc)
	}
	if fileExistsT(t, filepath.Join(h.cwd, "made.txt")) {
		t.Fatal("the tool ran before it was confirmed")
	}
	if err := d.conv.Confirm("t1", tc.ID, true); err != nil {
		t.Fatal(err)
	}
	done := d.until("tool done", func(ev agent.Event) bool { return ev.Kind == agent.EventToolDone })
	if !done.ToolCall.Success || done.ToolCall.ID != tc.ID {
		t.Errorf("done %+v", done.ToolCall)
	}
	d.end("t1")
	if got := d.text("t1"); got != "tool done" {
		t.Errorf("text %q", got)
	}
	if !fileExistsT(t, filepath.Join(h.cwd, "made.txt")) {
		t.Error("the confirmed tool did not run")
	}
	if d.count("t1", agent.EventToolStart) != 1 || d.count("t1", agent.EventToolInput) == 0 {
		t.Errorf("tool events:\n%s", d.dump())
	}

	// Denied: the call fails and nothing runs.
	d.send("t2", "again [bash:touch denied.txt]")
	ask = d.until("confirmation", func(ev agent.Event) bool {
		return ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation && ev.TurnID == "t2"
	})
	if err := d.conv.Confirm("t2", ask.ToolCall.ID, false); err != nil {
		t.Fatal(err)
	}
	done = d.until("tool done", func(ev agent.Event) bool { return ev.Kind == agent.EventToolDone && ev.TurnID == "t2" })
	if done.ToolCall.Success || done.ToolCall.Error == "" {
		t.Errorf("denied call %+v", done.ToolCall)
	}
	if end := d.end("t2"); end.Outcome != agent.OutcomeComplete {
		t.Errorf("t2 ended %+v", end)
	}
	if fileExistsT(t, filepath.Join(h.cwd, "denied.txt")) {
		t.Error("the denied tool ran")
	}
	if err := d.conv.Confirm("t2", ask.ToolCall.ID, true); err == nil {
		t.Error("a second answer to one call was taken")
	}
}

// An auto-allowed tool runs with no confirmation; its result folds into
// the call.
func TestToolCallRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.complete("t1", "use a tool [tool]")
	var ready, done *agent.ToolCall
	for _, ev := range d.of("t1") {
		switch ev.Kind {
		case agent.EventToolReady:
			ready = ev.ToolCall
		case agent.EventToolDone:
			done = ev.ToolCall
		}
	}
	if ready == nil || ready.NeedsConfirmation || ready.Input != `{"command":"echo fake-tool-ran","description":"fake tool call"}` {
		t.Errorf("ready %+v", ready)
	}
	if done == nil || !done.Success || done.Output != "fake-tool-ran" || done.PastTense != "Ran `echo fake-tool-ran`" {
		t.Errorf("done %+v", done)
	}
}

func TestThinkingIsReasoning(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.complete("t1", "ponder [think]")
	reasoning, reasoningPart, textPart := "", "", ""
	for _, ev := range d.of("t1") {
		switch ev.Kind {
		case agent.EventReasoning:
			reasoning += ev.Text
			reasoningPart = ev.PartID
		case agent.EventText:
			textPart = ev.PartID
		}
	}
	if reasoning != "Thinking about: ponder [think]" {
		t.Errorf("reasoning %q", reasoning)
	}
	if reasoningPart == "" || textPart == "" || reasoningPart == textPart {
		t.Errorf("parts: reasoning %q text %q", reasoningPart, textPart)
	}
	if got := d.text("t1"); got != "fake reply: ponder [think]" {
		t.Errorf("text %q", got)
	}
}

func TestAPIErrorEndsTurnWithError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.send("t1", "boom [error]")
	end := d.end("t1")
	if end.Outcome != agent.OutcomeError || !strings.Contains(end.Message, "500") {
		t.Errorf("end %+v", end)
	}
	// The conversation goes on.
	d.complete("t2", "after the error")
	if got := d.text("t2"); got != "fake reply: after the error" {
		t.Errorf("text %q", got)
	}
}

// C-TURN-69, C-TURN-70: a stop interrupts the turn, which ends cancelled;
// the CLI and its conversation stay.
func TestStopKeepsTheProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	proc := d.conv.(*conversation).proc

	d.send("t1", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText })
	if err := d.conv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	end := d.end("t1")
	if end.Outcome != agent.OutcomeCancelled || end.Point == "" {
		t.Errorf("stopped turn ended %+v", end)
	}
	d.complete("t2", "after the stop")
	if got := d.text("t2"); got != "fake reply: after the stop" {
		t.Errorf("text %q", got)
	}
	c := d.conv.(*conversation)
	c.mu.Lock()
	same := c.proc == proc
	c.mu.Unlock()
	if !same || h.headCount() != 1 {
		t.Errorf("the stop replaced the process (same %v, %d processes)", same, h.headCount())
	}
}

// C-TURN-76, C-TURN-77: with stopEnds query a stop ends the process; the
// next turn goes to a CLI that resumes the conversation.
func TestStopEndsQueryResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, StopEndsQuery)
	d := h.openNew()
	d.complete("t1", "remember me")
	d.send("t2", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText && ev.TurnID == "t2" })
	if err := d.conv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if end := d.end("t2"); end.Outcome != agent.OutcomeCancelled {
		t.Errorf("stopped turn ended %+v", end)
	}
	d.complete("t3", "after the stop")
	if n := h.headCount(); n != 2 {
		t.Errorf("%d CLI processes, want a second one after the stop", n)
	}
	hist := h.history(d.id)
	if !slices.Contains(hist, "user:remember me") || !slices.Contains(hist, "assistant:fake reply: remember me") {
		t.Errorf("the resumed CLI lost the history: %q", hist)
	}
}

// C-TURN-60: a steering message handed while the turn waits at a tool call
// goes into that turn.
func TestSteeringAtToolCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()

	d.send("t1", "make a file [bash:touch steer.txt]")
	ask := d.until("confirmation", func(ev agent.Event) bool {
		return ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation
	})
	if r := d.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "STEER at the tool"}); r != agent.SteerTaken {
		t.Fatalf("steer: %v", r)
	}
	if r := d.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "STEER at the tool"}); r != agent.SteerTaken {
		t.Errorf("the same steering message again: %v", r)
	}
	if err := d.conv.Confirm("t1", ask.ToolCall.ID, true); err != nil {
		t.Fatal(err)
	}
	consumed := d.until("steering consumed", func(ev agent.Event) bool { return ev.Kind == agent.EventSteeringConsumed })
	if consumed.TurnID != "t1" || consumed.SteeringID != "s1" {
		t.Errorf("consumed %+v", consumed)
	}
	d.end("t1")
	if got := d.text("t1"); got != "tool done" {
		t.Errorf("text %q", got)
	}
	if n := d.count("t1", agent.EventTurnEnd); n != 1 {
		t.Errorf("%d ends", n)
	}
	// The model read it in the same turn, as a system message.
	reqs := h.conversationRequests(d.id)
	last := reqs[len(reqs)-1]
	found := false
	for _, m := range last.Messages() {
		for _, s := range m.Texts() {
			if strings.Contains(s, "STEER at the tool") {
				found = true
			}
		}
	}
	if !found {
		t.Error("the steering message did not reach the model")
	}
	// Nothing more runs: the CLI answered one prompt for the turn.
	d.complete("t2", "next")
	for _, ev := range d.seen {
		if ev.Kind == agent.EventTurnStarted {
			t.Errorf("unexpected turn: %s", describe(ev))
		}
	}
}

// C-TURN-61, C-TURN-62, C-TURN-63: a steering message that reaches the CLI
// while the model writes the turn's last answer runs after it as a CLI turn
// of its own; its answer is the steered turn's, which stays open until it
// comes. C-TURN-64, C-TURN-78: a turn sent meanwhile waits for that.
func TestSteeringAfterLastAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()

	d.send("t1", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText })
	if r := d.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "late steer"}); r != agent.SteerTaken {
		t.Fatalf("steer: %v", r)
	}
	d.send("t2", "queued behind")
	// C-TURN-65, C-TURN-66: the held turn's prompt is not out; no steering yet.
	if r := d.conv.Steer(agent.Steering{ID: "s2", TurnID: "t2", Text: "too early"}); r != agent.SteerNotYet {
		t.Errorf("steering a held turn: %v", r)
	}
	end := d.end("t1")
	if end.Outcome != agent.OutcomeComplete {
		t.Errorf("t1 ended %+v", end)
	}
	text := d.text("t1")
	if !strings.HasPrefix(text, "slow slow") || !strings.HasSuffix(text, "|fake reply: late steer") {
		t.Errorf("t1 text %q", text)
	}
	if d.count("t2", agent.EventText) != 0 {
		t.Error("the queued turn ran before the steered one ended")
	}
	d.end("t2")
	if got := d.text("t2"); got != "fake reply: queued behind" {
		t.Errorf("t2 text %q", got)
	}
	consumed := false
	for _, ev := range d.of("t1") {
		consumed = consumed || (ev.Kind == agent.EventSteeringConsumed && ev.SteeringID == "s1")
	}
	if !consumed {
		t.Error("the late steering message was not reported consumed")
	}
}

// C-TURN-74, C-TURN-75: a steering message the CLI held and had not taken
// into the stopped turn is answered in a turn of its own, which names it.
func TestStopRunsHeldSteeringAsItsOwnTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()

	d.send("t1", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText })
	if r := d.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "steer then stop"}); r != agent.SteerTaken {
		t.Fatalf("steer: %v", r)
	}
	d.send("t2", "sent behind")
	if err := d.conv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The turn sent behind ends cancelled unsent; the stopped one cancelled.
	if end := d.end("t2"); end.Outcome != agent.OutcomeCancelled {
		t.Errorf("t2 ended %+v", end)
	}
	if end := d.end("t1"); end.Outcome != agent.OutcomeCancelled {
		t.Errorf("t1 ended %+v", end)
	}
	started := d.until("turn started", func(ev agent.Event) bool { return ev.Kind == agent.EventTurnStarted })
	if started.SteeringID != "s1" || started.TurnID == "" || started.TurnID == "t1" {
		t.Errorf("started %+v", started)
	}
	end := d.end(started.TurnID)
	if end.Outcome != agent.OutcomeComplete {
		t.Errorf("steering turn ended %+v", end)
	}
	if got := d.text(started.TurnID); got != "fake reply: steer then stop" {
		t.Errorf("steering turn text %q", got)
	}
	if d.count("t2", agent.EventText) != 0 {
		t.Error("the turn sent behind the stop ran")
	}
}

func TestResumeAfterClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.complete("t1", "first words")
	d.close()

	r := h.open(agent.OpenResume, d.id, "", "")
	r.complete("t2", "second words")
	if got := r.text("t2"); got != "fake reply: second words" {
		t.Errorf("text %q", got)
	}
	want := []string{"user:first words", "assistant:fake reply: first words", "user:second words"}
	if got := h.history(d.id); !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// A resume of a conversation the CLI never kept starts it under its id.
func TestResumeOfNothingStartsFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	r := h.open(agent.OpenResume, "3b241101-e2bb-4255-8caf-4136c566a962", "", "")
	r.complete("t1", "hello")
	if got := h.history(r.id); !slices.Equal(got, []string{"user:hello"}) {
		t.Errorf("history %q", got)
	}
}

// Fork at turn 1 of 3 and rewind to turn 1: the CLI resumes at that turn's
// point, with only the kept turns as history.
func TestForkAndRewind(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	p1 := d.complete("t1", "one").Point
	d.complete("t2", "two [tool]")
	d.complete("t3", "three")
	d.close()

	forkID := "6f1c1a36-33c5-4b7e-9b0c-1f3f6f0ad001"
	f := h.open(agent.OpenFork, forkID, d.id, p1)
	f.complete("f1", "forked")
	want := []string{"user:one", "assistant:fake reply: one", "user:forked"}
	if got := h.history(forkID); !slices.Equal(got, want) {
		t.Errorf("fork history %q, want %q", got, want)
	}
	f.close()

	r := h.open(agent.OpenRewind, d.id, "", p1)
	r.complete("r1", "rewound")
	want = []string{"user:one", "assistant:fake reply: one", "user:rewound"}
	if got := h.history(d.id); !slices.Equal(got, want) {
		t.Errorf("rewind history %q, want %q", got, want)
	}
	r.close()

	// Both read back as the kept turn and the new one.
	for _, tc := range []struct{ id, second string }{{forkID, "forked"}, {d.id, "rewound"}} {
		turns, err := h.claude.ReadTranscript(tc.id, h.cwd)
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		for _, turn := range turns {
			said = append(said, turn.UserText)
		}
		if !slices.Equal(said, []string{"one", tc.second}) {
			t.Errorf("%s reads back %q", tc.id, said)
		}
		if turns[0].Point != p1 {
			t.Errorf("%s turn 1 point %s, want %s", tc.id, turns[0].Point, p1)
		}
	}
	// The source of the fork is untouched by it.
	if !fileExistsT(t, transcriptPath(h.cfg, d.id, h.cwd)) || !fileExistsT(t, transcriptPath(h.cfg, forkID, h.cwd)) {
		t.Error("transcripts missing")
	}
}

// A rewind to a stopped turn resumes at its interruption.
func TestRewindToStoppedTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.send("t1", "talk slowly [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText })
	if err := d.conv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	p1 := d.end("t1").Point
	d.complete("t2", "dropped by the rewind")
	d.close()

	r := h.open(agent.OpenRewind, d.id, "", p1)
	r.complete("r1", "instead")
	hist := h.history(d.id)
	if slices.ContainsFunc(hist, func(s string) bool { return strings.Contains(s, "dropped") }) {
		t.Errorf("rewound history kept the dropped turn: %q", hist)
	}
	if last := hist[len(hist)-1]; !strings.HasSuffix(last, "instead") {
		t.Errorf("history %q", hist)
	}
}

func TestDeleteRemovesTranscript(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	d := h.openNew()
	d.complete("t1", "keep me")
	d.close()
	path := transcriptPath(h.cfg, d.id, h.cwd)
	if !fileExistsT(t, path) {
		t.Fatalf("no transcript at %s", path)
	}
	if err := h.claude.Delete(t.Context(), d.id, []string{h.cwd}); err != nil {
		t.Fatal(err)
	}
	if fileExistsT(t, path) {
		t.Error("transcript still there")
	}
	if _, err := h.claude.ReadTranscript(d.id, h.cwd); err == nil {
		t.Error("read back a deleted conversation")
	}
	if err := h.claude.Delete(t.Context(), d.id, []string{h.cwd}); err != nil {
		t.Errorf("deleting again: %v", err)
	}
}
