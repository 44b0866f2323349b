package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/terminal"
)

func newConv(t *testing.T, dir string) (*Conversation, *terminal.Registry) {
	t.Helper()
	reg := terminal.NewRegistry(bus.NewBus(256), nil)
	t.Cleanup(reg.Close)
	c := New(Config{Dir: dir, Terminals: reg, Session: "ahp-session:/s", Owner: "user:test"})
	return c, reg
}

// run sends one command and collects its events up to its ending.
func run(t *testing.T, c *Conversation, id, command string) ([]agent.Event, *agent.End) {
	t.Helper()
	if err := c.Send(context.Background(), agent.Turn{ID: id, Text: command}); err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-c.Events():
			if ev.TurnID != id {
				t.Fatalf("event of turn %q, want %q", ev.TurnID, id)
			}
			if ev.Kind == agent.EventTurnEnd {
				return evs, ev.End
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("%q never ended", command)
		}
	}
}

// TestCommands: a command is one tool call run in a terminal, in the
// chat's directory; its result names the terminal, carries the output and
// says the exit status; a failing command fails the call and the turn
// still completes (C-TURN-29..31; VS Code's hostFeaturesSuite).
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	c, reg := newConv(t, dir)
	defer c.Close()
	for _, tc := range []struct {
		command, out string
		code         int
	}{
		{"echo hi", "hi\n", 0},
		{"echo oops >&2; exit 3", "oops\n", 3},
		{"pwd", dir + "\n", 0},
	} {
		evs, end := run(t, c, "t-"+tc.command, tc.command)
		if end.Outcome != agent.OutcomeComplete || end.ExitCode == nil || *end.ExitCode != tc.code {
			t.Errorf("%q ended %+v, want complete with exit %d", tc.command, end, tc.code)
		}
		if len(evs) != 3 || evs[0].Kind != agent.EventToolStart || evs[1].Kind != agent.EventToolReady || evs[2].Kind != agent.EventToolDone {
			t.Fatalf("%q: events %+v, want a tool call's start, ready and done", tc.command, evs)
		}
		done := evs[2].ToolCall
		if done.Success != (tc.code == 0) || done.Output != tc.out || done.Terminal == "" || done.NeedsConfirmation {
			t.Errorf("%q: call %+v", tc.command, done)
		}
		if tc.code != 0 && !strings.Contains(done.PastTense, "exited with status 3") {
			t.Errorf("%q: past tense %q", tc.command, done.PastTense)
		}
		term, ok := reg.Get(done.Terminal)
		if !ok || !strings.Contains(term.Text(), strings.TrimSpace(tc.out)) {
			t.Errorf("%q: terminal %s holds %q", tc.command, done.Terminal, term.Text())
		}
		if cl := term.Claim(); cl.Kind != "session" || cl.Session != "ahp-session:/s" || cl.ToolCallID != done.ID {
			t.Errorf("%q: terminal claim %+v", tc.command, cl)
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
// group; its call fails with the signal's status, and a second command may
// not start while one runs.
func TestStopInterruptsTheGroup(t *testing.T) {
	dir := t.TempDir()
	c, _ := newConv(t, dir)
	defer c.Close()
	if err := c.Send(context.Background(), agent.Turn{ID: "t1", Text: "echo $$ > up; sleep 30"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), agent.Turn{ID: "t2", Text: "true"}); err == nil {
		t.Error("a second command started while one ran")
	}
	// The shell is up and sleeping once its child runs sleep (a ^C between
	// its fork and exec, or before, is the shell's to handle, and may not
	// end it).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "up")); len(b) > 0 && childRuns(strings.TrimSpace(string(b)), "sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started sleeping")
		}
	}
	started := time.Now()
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for ev := range c.Events() {
		if ev.Kind == agent.EventToolDone {
			// 130: the SIGINT ended it; 137: the kill after stopGrace did.
			if ev.ToolCall.Success || !strings.Contains(ev.ToolCall.PastTense, "status 130") && !strings.Contains(ev.ToolCall.PastTense, "status 137") {
				t.Errorf("stopped command's call %+v, want exit 130 (or 137)", ev.ToolCall)
			}
		}
		if ev.Kind == agent.EventTurnEnd {
			break
		}
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("the stop took %s", took)
	}
}

// TestCloseEndsEvents: Close ends what runs and closes Events; a Send
// after it fails.
func TestCloseEndsEvents(t *testing.T) {
	c, _ := newConv(t, t.TempDir())
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

// childRuns reports whether a child of process ppid runs the command comm.
func childRuns(ppid, comm string) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(b[end+1:]))
		if string(b[open+1:end]) == comm && len(f) > 1 && f[1] == ppid {
			return true
		}
	}
	return false
}
