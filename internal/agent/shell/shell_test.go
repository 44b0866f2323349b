package shell

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// run sends one command and collects its events up to its ending.
func run(t *testing.T, c *Conversation, id, command string) (string, *agent.End) {
	t.Helper()
	if err := c.Send(context.Background(), agent.Turn{ID: id, Text: command}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-c.Events():
			if ev.TurnID != id {
				t.Fatalf("event of turn %q, want %q", ev.TurnID, id)
			}
			switch ev.Kind {
			case agent.EventText:
				out.WriteString(ev.Text)
			case agent.EventTurnEnd:
				return out.String(), ev.End
			}
		case <-timeout:
			t.Fatalf("%q never ended", command)
		}
	}
}

// TestCommands: output streams as text, the exit status ends the turn
// (C-TURN-29..31), and the command runs in the chat's directory.
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	c := New("", dir)
	defer c.Close()
	for _, tc := range []struct {
		command, out string
		code         int
		outcome      agent.Outcome
	}{
		{"echo hi", "hi\n", 0, agent.OutcomeComplete},
		{"echo oops >&2; exit 3", "oops\n", 3, agent.OutcomeError},
		{"pwd", dir + "\n", 0, agent.OutcomeComplete},
	} {
		out, end := run(t, c, "t-"+tc.command, tc.command)
		if out != tc.out || end.Outcome != tc.outcome || end.ExitCode == nil || *end.ExitCode != tc.code {
			t.Errorf("%q: out %q, end %+v; want %q, exit %d", tc.command, out, end, tc.out, tc.code)
		}
		if tc.code != 0 && !strings.Contains(end.Message, "exited with status") {
			t.Errorf("%q: message %q", tc.command, end.Message)
		}
	}
	if Caps.Steering || Caps.Resume || !Caps.FailureGoesOn {
		t.Errorf("caps %+v: a command takes no steering, cannot resume, and pauses nothing when it fails", Caps)
	}
	if c.Steer(agent.Steering{ID: "s"}) != agent.SteerUnsupported {
		t.Error("a command took steering")
	}
}

// TestStopInterruptsTheGroup: a stop interrupts the command's process
// group; the turn ends with the signal's status, and a second command may
// not start while one runs.
func TestStopInterruptsTheGroup(t *testing.T) {
	c := New("", t.TempDir())
	defer c.Close()
	if err := c.Send(context.Background(), agent.Turn{ID: "t1", Text: "echo started; sleep 30"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), agent.Turn{ID: "t2", Text: "true"}); err == nil {
		t.Error("a second command started while one ran")
	}
	if ev := <-c.Events(); ev.Kind != agent.EventText || ev.Text != "started\n" {
		t.Fatalf("first event %+v, want the command's output", ev)
	}
	started := time.Now()
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for ev := range c.Events() {
		if ev.Kind == agent.EventTurnEnd {
			// 130: the SIGINT ended it; 137: it ignored that and the kill
			// after stopGrace did.
			if ev.End.Outcome != agent.OutcomeError || ev.End.ExitCode == nil || (*ev.End.ExitCode != 130 && *ev.End.ExitCode != 137) {
				t.Errorf("stopped command ended %+v, want exit 130 (or 137)", ev.End)
			}
			break
		}
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("the stop took %s", took)
	}
}

// TestCloseEndsEvents: Close interrupts what runs and closes Events; a Send
// after it fails.
func TestCloseEndsEvents(t *testing.T) {
	c := New("", t.TempDir())
	if err := c.Send(context.Background(), agent.Turn{ID: "t1", Text: "sleep 30"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for range c.Events() {
		}
		close(done)
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Events was not closed")
	}
	if err := c.Send(context.Background(), agent.Turn{ID: "t2", Text: "true"}); err == nil {
		t.Error("Send after Close ran")
	}
}
