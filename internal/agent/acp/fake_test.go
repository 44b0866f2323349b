package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/testutil/fakemodel"
)

// fakeAgent builds testdata/acpagent once per test binary.
func fakeAgent(t *testing.T) string {
	t.Helper()
	return fakemodel.Build(t, "acpagent")
}

// TestFakeAgent drives the in-repo fake ACP agent: text and thoughts
// stream; a permission is asked and confirmed (allow once); a stop ends the
// turn cancelled within a second; a read outside the chat is refused; a
// max_tokens stop is an error naming it; the agent exiting or writing
// garbage mid-turn ends the turn with an error and the next turn runs in a
// fresh process that loads the session.
func TestFakeAgent(t *testing.T) {
	bin := fakeAgent(t)
	dir := t.TempDir()
	a, err := New(Options{Name: "fake", Command: bin, Args: []string{"-state", t.TempDir()}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := a.Open(context.Background(), agent.OpenParams{Mode: agent.OpenNew, ConversationID: "f1", Directories: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	turn := func(id, text string, on func(agent.Event)) []agent.Event {
		t.Helper()
		if err := conv.Send(context.Background(), agent.Turn{ID: id, Text: text, HostContext: "from the host"}); err != nil {
			t.Fatal(err)
		}
		return collect(t, conv, id, on)
	}
	endOf := func(evs []agent.Event) *agent.End { return evs[len(evs)-1].End }

	evs := turn("t1", "hello", nil)
	if endOf(evs).Outcome != agent.OutcomeComplete || textOf(evs) != "fake acp: hello" {
		t.Fatalf("t1: %+v %q", endOf(evs), textOf(evs))
	}
	thought := false
	for _, ev := range evs {
		thought = thought || ev.Kind == agent.EventReasoning
	}
	if !thought {
		t.Error("t1 streamed no thought")
	}

	evs = turn("t2", "[perm]", func(ev agent.Event) {
		if ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation {
			if err := conv.Confirm("t2", ev.ToolCall.ID, true); err != nil {
				t.Errorf("confirm: %v", err)
			}
		}
	})
	if textOf(evs) != "picked allow" {
		t.Errorf("t2 said %q", textOf(evs))
	}

	var stopped time.Time
	evs = turn("t3", "[slow]", func(ev agent.Event) {
		if ev.Kind == agent.EventText && stopped.IsZero() {
			stopped = time.Now()
			_ = conv.Stop(context.Background())
		}
	})
	if endOf(evs).Outcome != agent.OutcomeCancelled || time.Since(stopped) > time.Second {
		t.Errorf("t3 ended %+v after %v", endOf(evs), time.Since(stopped))
	}

	evs = turn("t4", "[read:/etc/hostname]", nil)
	if got := textOf(evs); !strings.HasPrefix(got, "read refused:") {
		t.Errorf("t4 said %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	evs = turn("t5", "[read:"+filepath.Join(dir, "in.txt")+"]", nil)
	if got := textOf(evs); got != "read: inside" {
		t.Errorf("t5 said %q", got)
	}

	evs = turn("t6", "[maxtokens]", nil)
	if e := endOf(evs); e.Outcome != agent.OutcomeError || !strings.Contains(e.Message, "max_tokens") {
		t.Errorf("t6 ended %+v", e)
	}

	for _, f := range []struct{ id, text, says string }{{"t7", "[exit]", "exited"}, {"t8", "[garbage]", "not JSON-RPC"}} {
		evs = turn(f.id, f.text, nil)
		if e := endOf(evs); e.Outcome != agent.OutcomeError || !strings.Contains(e.Message, f.says) {
			t.Errorf("%s ended %+v", f.id, e)
		}
		evs = turn(f.id+"b", "again", nil)
		if endOf(evs).Outcome != agent.OutcomeComplete || textOf(evs) != "fake acp: again" {
			t.Errorf("%sb after the fault: %+v %q", f.id, endOf(evs), textOf(evs))
		}
	}

	_ = conv.Close()
	tts, err := a.ReadTurns(context.Background(), "f1", []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(tts) < 2 || tts[0].Text != "hello" || len(tts[0].Parts) == 0 || tts[0].Parts[0].Text != "fake acp: hello" {
		t.Fatalf("read back %+v", tts)
	}
}

// TestStopWhilePreparingACP: a turn stopped while the agent is still
// initializing (it waits on a gate the test opens after the stop) ends
// cancelled at once, its prompt never sent (C-TURN-107, 108); the next turn
// runs in a fresh process.
func TestStopWhilePreparingACP(t *testing.T) {
	bin := fakeAgent(t)
	state := t.TempDir()
	log := filepath.Join(t.TempDir(), "prompts.log")
	gate := filepath.Join(t.TempDir(), "initialized")
	a, err := New(Options{Name: "fake", Command: bin, Args: []string{"-state", state, "-log", log, "-init-gate", gate}})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := a.Open(context.Background(), agent.OpenParams{Mode: agent.OpenNew, ConversationID: "p1", Directories: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	if err := conv.Send(context.Background(), agent.Turn{ID: "t1", Text: "never sent"}); err != nil {
		t.Fatal(err)
	}
	// The agent has begun to initialize.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "initialize") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never began to initialize")
		}
	}
	start := time.Now()
	if err := conv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, conv, "t1", nil)
	if e := evs[len(evs)-1].End; e.Outcome != agent.OutcomeCancelled || time.Since(start) > time.Second {
		t.Fatalf("t1 ended %+v after %v", e, time.Since(start))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := conv.Send(context.Background(), agent.Turn{ID: "t2", Text: "sent"}); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, conv, "t2", nil)
	if textOf(evs) != "fake acp: sent" {
		t.Fatalf("t2 said %q", textOf(evs))
	}
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(state, e.Name()))
		if strings.Contains(string(b), "never sent") {
			t.Errorf("the stopped turn's prompt reached the agent: %s", b)
		}
	}
}
