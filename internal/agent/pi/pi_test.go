package pi

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// TestDecode: agents.pi is decoded strictly and checked.
func TestDecode(t *testing.T) {
	good := `{"binary":"pi","providers":{"p":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","models":[{"id":"m"}]}},"defaultModel":"p/m","env":["A=b"]}`
	o, err := Decode(json.RawMessage(good))
	if err != nil || o.defaultModel() != "p/m" || len(o.models()) != 1 || o.models()[0].ID != "p/m" {
		t.Fatalf("good config: %+v, %v", o, err)
	}
	for _, bad := range []string{
		`{"bogus":1}`,
		`{"providers":{"p":{"api":"openai-completions","models":[{"id":"m"}]}}}`,
		`{"providers":{"p":{"baseUrl":"x","api":"y","models":[]}}}`,
		`{"providers":{"p":{"baseUrl":"x","api":"y","models":[{"id":""}]}}}`,
		`{"providers":{"p":{"baseUrl":"x","api":"y","models":[{"id":"m","bogus":1}]}}}`,
		`{"providers":{"p":{"baseUrl":"x","api":"y","models":[{"id":"m"}]}},"defaultModel":"p/other"}`,
		`{"defaultModel":"nomodel"}`,
		`{"env":["NOEQUALS"]}`,
	} {
		if _, err := Decode(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestPromptReadsBack: the host's words and attachments go into the prompt
// around what was said (C-TURN-111), and a read-back takes them out again.
func TestPromptReadsBack(t *testing.T) {
	msg, imgs := promptOf(agent.Turn{Text: "what was said", HostContext: "the host's words",
		Attachments: []agent.Attachment{
			{As: "inline", Label: "a.txt", Path: "/w/a.txt", Text: "inlined"},
			{As: "path", Label: "b.go", Path: "/w/b.go"},
			{As: "image", MimeType: "image/png", Data: []byte{1, 2}},
		}})
	if want := "<host-context>\nthe host's words\n</host-context>\n\nwhat was said"; len(msg) < len(want) || msg[:len(want)] != want {
		t.Errorf("prompt %q", msg)
	}
	if len(imgs) != 1 || imgs[0].MimeType != "image/png" || imgs[0].Data != "AQI=" {
		t.Errorf("images %+v", imgs)
	}
	if got := saidOf(msg); got != "what was said" {
		t.Errorf("read back %q", got)
	}
}

// TestQueueUpdate: a steering message is consumed once it entered pi's
// queue and left it, oldest first among equal texts.
func TestQueueUpdate(t *testing.T) {
	c := &conversation{}
	r := &run{turn: agent.Turn{ID: "t"}}
	r.steers = []*steer{{id: "a", text: "x"}, {id: "b", text: "x"}}
	if evs := c.queueUpdate(r, []string{"x", "x"}); len(evs) != 0 {
		t.Fatalf("entering the queue consumed %v", evs)
	}
	evs := c.queueUpdate(r, []string{"x"})
	if len(evs) != 1 || evs[0].SteeringID != "a" || evs[0].Kind != agent.EventSteeringConsumed {
		t.Fatalf("first out: %+v", evs)
	}
	if evs := c.queueUpdate(r, nil); len(evs) != 1 || evs[0].SteeringID != "b" {
		t.Fatalf("second out: %+v", evs)
	}
}

// TestTranscriptTurns: a user message right after a tool result is the
// running turn's steering; one after an answer opens a turn; the point is
// a turn's last entry.
func TestTranscriptTurns(t *testing.T) {
	lines := []string{
		`{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"one"}]}}`,
		`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse","usage":{"input":3,"output":2}}}`,
		`{"type":"message","id":"r1","parentId":"a1","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false}}`,
		`{"type":"message","id":"s1","parentId":"r1","message":{"role":"user","content":[{"type":"text","text":"steer"}]}}`,
		`{"type":"message","id":"a2","parentId":"s1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"done"}],"stopReason":"stop"}}`,
		`{"type":"message","id":"u2","parentId":"a2","message":{"role":"user","content":"two"}}`,
		`{"type":"message","id":"a3","parentId":"u2","message":{"role":"assistant","content":[],"stopReason":"aborted"}}`,
	}
	var entries []*entry
	for _, l := range lines {
		e := &entry{}
		if err := json.Unmarshal([]byte(l), e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	br, err := branch(entries, "")
	if err != nil {
		t.Fatal(err)
	}
	tts := transcriptTurns(br)
	if len(tts) != 2 || tts[0].Text != "one" || len(tts[0].Steering) != 1 || tts[0].Point != "a2" ||
		tts[1].Text != "two" || tts[1].Outcome != agent.OutcomeCancelled || tts[1].Point != "a3" {
		t.Fatalf("turns %+v", tts)
	}
	p := tts[0].Parts
	if len(p) != 3 || p[0].Tool == nil || !p[0].Done || p[0].Tool.Output != "out" || p[1].Kind != agent.TranscriptReasoning || p[2].Text != "done" {
		t.Fatalf("parts %+v", p)
	}
	cut, err := branch(entries, "a1")
	if err != nil || len(cut) != 2 || cut[1].ID != "a1" {
		t.Fatalf("branch at a1: %v %v", cut, err)
	}
	if _, err := branch(entries, "nope"); err == nil {
		t.Error("a branch at a missing entry")
	}
}

// TestSteerNotWrittenStaysPending: a steering message pi's stdin cannot
// take (the process is dying: its exit ends the turn) is not yet taken,
// never refused: refused, the host takes it out, where C-TURN-86 keeps it
// to steer the next turn in a fresh pi.
func TestSteerNotWrittenStaysPending(t *testing.T) {
	p := agentproc.Scripted(agentproc.Spec{Name: "pi", Log: slog.New(slog.DiscardHandler), StdinQueue: 1})
	if err := p.WriteLine([]byte(`{"type":"prompt"}`)); err != nil {
		t.Fatal(err)
	}
	r := &run{turn: agent.Turn{ID: "t"}, accepted: true, proc: p}
	c := &conversation{proc: p, running: r, log: slog.New(slog.DiscardHandler)}
	if got := c.Steer(agent.Steering{ID: "s", TurnID: "t", Text: "steer"}); got != agent.SteerNotYet {
		t.Fatalf("Steer with stdin full = %v, want SteerNotYet", got)
	}
	if len(r.steers) != 0 {
		t.Fatalf("the run holds %d steering messages, want none", len(r.steers))
	}
	p.Written() // stdin drained: the next hand-over is taken
	if got := c.Steer(agent.Steering{ID: "s", TurnID: "t", Text: "steer"}); got != agent.SteerTaken {
		t.Fatalf("Steer once stdin takes it = %v, want SteerTaken", got)
	}
}
