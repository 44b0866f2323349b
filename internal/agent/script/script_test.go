package script

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// deadline bounds every wait on events.
const deadline = 10 * time.Second

// recorder reads a conversation's events for a test.
type recorder struct {
	t    *testing.T
	conv agent.Conversation
	// all is every event read so far.
	all []agent.Event
}

// open opens a conversation on s and closes it when the test ends.
func open(t *testing.T, s *Script, p agent.OpenParams) *recorder {
	t.Helper()
	conv, err := s.Open(context.Background(), p)
	if err != nil {
		t.Fatalf("Open(%+v): %v", p, err)
	}
	t.Cleanup(func() { conv.Close() })
	return &recorder{t: t, conv: conv}
}

// openNew opens a new conversation id on a fresh Script built from o.
func openNew(t *testing.T, o Options, id string) (*Script, *recorder) {
	t.Helper()
	s := New(o)
	return s, open(t, s, agent.OpenParams{Mode: agent.OpenNew, ConversationID: id})
}

func (r *recorder) send(id, text string) {
	r.t.Helper()
	r.sendTurn(agent.Turn{ID: id, Text: text})
}

func (r *recorder) sendTurn(turn agent.Turn) {
	r.t.Helper()
	if err := r.conv.Send(context.Background(), turn); err != nil {
		r.t.Fatalf("Send(%s): %v", turn.ID, err)
	}
}

// until reads events until one satisfies match and returns the events read
// by this call, that one included.
func (r *recorder) until(what string, match func(agent.Event) bool) []agent.Event {
	r.t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	var got []agent.Event
	for {
		select {
		case ev, ok := <-r.conv.Events():
			if !ok {
				r.t.Fatalf("events closed while waiting for %s; read %s", what, describe(got))
			}
			r.all = append(r.all, ev)
			got = append(got, ev)
			if match(ev) {
				return got
			}
		case <-timer.C:
			r.t.Fatalf("no %s within %v; read %s", what, deadline, describe(got))
		}
	}
}

// end reads until turnID ends and returns the events read.
func (r *recorder) end(turnID string) []agent.Event {
	r.t.Helper()
	return r.until("end of "+turnID, func(ev agent.Event) bool {
		return ev.Kind == agent.EventTurnEnd && ev.TurnID == turnID
	})
}

// kind reads until an event of kind k.
func (r *recorder) kind(k agent.EventKind) []agent.Event {
	r.t.Helper()
	return r.until(kindName(k), func(ev agent.Event) bool { return ev.Kind == k })
}

// closed waits for Events to be closed, failing on any event.
func (r *recorder) closed() {
	r.t.Helper()
	select {
	case ev, ok := <-r.conv.Events():
		if ok {
			r.t.Fatalf("event %s after the end", describe([]agent.Event{ev}))
		}
	case <-time.After(deadline):
		r.t.Fatalf("events not closed within %v", deadline)
	}
}

func kindName(k agent.EventKind) string {
	names := map[agent.EventKind]string{
		agent.EventText: "text", agent.EventReasoning: "reasoning", agent.EventToolStart: "toolStart",
		agent.EventToolInput: "toolInput", agent.EventToolReady: "toolReady", agent.EventToolDone: "toolDone",
		agent.EventUsage: "usage", agent.EventNotice: "notice", agent.EventSteeringConsumed: "consumed",
		agent.EventSteeringReturned: "returned", agent.EventTurnStarted: "turnStarted",
		agent.EventTurnEnd: "end", agent.EventExited: "exited",
	}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// shape is the kinds of evs with runs of one kind folded into one.
func shape(evs []agent.Event) []string {
	var out []string
	for _, ev := range evs {
		n := kindName(ev.Kind)
		if len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

func count(evs []agent.Event, k agent.EventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func describe(evs []agent.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "[%s %s %q", kindName(ev.Kind), ev.TurnID, ev.Text)
		if ev.End != nil {
			fmt.Fprintf(&b, " %+v", *ev.End)
		}
		if ev.SteeringID != "" {
			fmt.Fprintf(&b, " steering=%s", ev.SteeringID)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// answer joins the markdown deltas of evs.
func answer(evs []agent.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == agent.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func lastEnd(t *testing.T, evs []agent.Event) agent.End {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].End == nil {
		t.Fatalf("no end in %s", describe(evs))
	}
	return *evs[len(evs)-1].End
}

func steeringIDs(evs []agent.Event, k agent.EventKind) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev.SteeringID)
		}
	}
	return out
}

func TestDefaults(t *testing.T) {
	s := New(Options{})
	if s.Provider() != "script" {
		t.Errorf("Provider = %q, want script", s.Provider())
	}
	info := s.Info(context.Background())
	if info.DisplayName != "Script" || info.Unavailable != "" || len(info.Models) == 0 {
		t.Errorf("Info = %+v", info)
	}
	if got, want := s.Capabilities(), DefaultCapabilities(); got != want {
		t.Errorf("Capabilities = %+v, want %+v", got, want)
	}
	want := agent.Capabilities{Steering: true, Withdraw: true, OneTurnAtATime: true, Fork: true, Rewind: true, Resume: true, Delete: true, SideChat: true}
	if DefaultCapabilities() != want {
		t.Errorf("DefaultCapabilities = %+v, want %+v", DefaultCapabilities(), want)
	}
	if got := New(Options{ExactCaps: true}).Capabilities(); got != (agent.Capabilities{}) {
		t.Errorf("ExactCaps zero: Capabilities = %+v, want none", got)
	}
	only := agent.Capabilities{Fork: true}
	if got := New(Options{Caps: only}).Capabilities(); got != only {
		t.Errorf("Capabilities = %+v, want %+v", got, only)
	}
	if got := New(Options{Provider: "p", DisplayName: "P"}); got.Provider() != "p" || got.Info(context.Background()).DisplayName != "P" {
		t.Errorf("names not kept: %+v", got.Info(context.Background()))
	}
}

func TestDefaultAnswer(t *testing.T) {
	_, r := openNew(t, Options{}, "c1")
	r.send("t1", "hello world")
	evs := r.end("t1")
	if got, want := shape(evs), []string{"text", "usage", "end"}; !slices.Equal(got, want) {
		t.Fatalf("shape = %v, want %v (%s)", got, want, describe(evs))
	}
	if n := count(evs, agent.EventText); n < 3 {
		t.Errorf("%d text deltas, want 3 or more", n)
	}
	if got := answer(evs); got != "echo: hello world" {
		t.Errorf("answer = %q", got)
	}
	for i, ev := range evs {
		if ev.TurnID != "t1" {
			t.Errorf("event %d has TurnID %q", i, ev.TurnID)
		}
		if ev.Kind != agent.EventText {
			continue
		}
		// One markdown part: the first delta names it, the rest continue it.
		if wantPart := map[bool]string{true: "t1-md-1", false: ""}[i == 0]; ev.PartID != wantPart {
			t.Errorf("delta %d PartID = %q, want %q", i, ev.PartID, wantPart)
		}
	}
	u := evs[len(evs)-2].Usage
	if u == nil || u.InputTokens == 0 || u.OutputTokens == 0 || u.Model != "script" {
		t.Errorf("usage = %+v", u)
	}
	if got, want := lastEnd(t, evs), (agent.End{Outcome: agent.OutcomeComplete, Point: "c1#1"}); !equalEnd(got, want) {
		t.Errorf("end = %+v, want %+v", got, want)
	}
}

func equalEnd(a, b agent.End) bool {
	return a.Outcome == b.Outcome && a.ErrorType == b.ErrorType && a.Message == b.Message &&
		a.Resumable == b.Resumable && a.Point == b.Point && a.ExitCode == nil && b.ExitCode == nil
}

// TestMarkers drives one turn per marker (and combination) to its end.
func TestMarkers(t *testing.T) {
	approve := func(approved bool) func(*testing.T, *recorder) {
		return func(t *testing.T, r *recorder) {
			evs := r.kind(agent.EventToolReady)
			call := evs[len(evs)-1].ToolCall
			if call == nil || !call.NeedsConfirmation || call.ID != "t1-tool-1" {
				t.Fatalf("tool ready = %+v, want t1-tool-1 needing confirmation", call)
			}
			if err := r.conv.Confirm("t1", call.ID, approved); err != nil {
				t.Fatalf("Confirm: %v", err)
			}
		}
	}
	stopAfterText := func(t *testing.T, r *recorder) {
		r.kind(agent.EventText)
		if err := r.conv.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	stopAtConfirm := func(t *testing.T, r *recorder) {
		r.kind(agent.EventToolReady)
		if err := r.conv.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	complete := agent.End{Outcome: agent.OutcomeComplete, Point: "c1#1"}
	tests := []struct {
		name        string
		text        string
		hostContext string
		drive       func(*testing.T, *recorder)
		shape       []string
		answer      string
		end         agent.End
		check       func(*testing.T, []agent.Event)
	}{
		{
			name:   "plain",
			text:   "hi",
			shape:  []string{"text", "usage", "end"},
			answer: "echo: hi",
			end:    complete,
		},
		{
			name:   "think",
			text:   "[think] hi",
			shape:  []string{"reasoning", "text", "usage", "end"},
			answer: "echo: [think] hi",
			end:    complete,
			check: func(t *testing.T, evs []agent.Event) {
				if n := count(evs, agent.EventReasoning); n < 2 {
					t.Errorf("%d reasoning deltas, want several", n)
				}
				if evs[0].PartID != "t1-think-1" {
					t.Errorf("reasoning PartID = %q", evs[0].PartID)
				}
			},
		},
		{
			name:   "tool",
			text:   "[tool] hi",
			shape:  []string{"toolStart", "toolInput", "toolReady", "toolDone", "text", "usage", "end"},
			answer: "echo: [tool] hi",
			end:    complete,
			check: func(t *testing.T, evs []agent.Event) {
				var start, ready, done *agent.ToolCall
				for _, ev := range evs {
					switch ev.Kind {
					case agent.EventToolStart:
						start = ev.ToolCall
					case agent.EventToolReady:
						ready = ev.ToolCall
					case agent.EventToolDone:
						done = ev.ToolCall
					}
				}
				if start.ID != "t1-tool-1" || start.Name != "echo" {
					t.Errorf("tool start = %+v", start)
				}
				if ready.NeedsConfirmation || ready.Input != `{"text":"[tool] hi"}` {
					t.Errorf("tool ready = %+v", ready)
				}
				if !done.Success || done.Output != "[tool] hi" || done.Error != "" {
					t.Errorf("tool done = %+v", done)
				}
			},
		},
		{
			name:   "confirm approved",
			text:   "[confirm] hi",
			drive:  approve(true),
			shape:  []string{"toolStart", "toolInput", "toolReady", "toolDone", "text", "usage", "end"},
			answer: "echo: [confirm] hi",
			end:    complete,
			check: func(t *testing.T, evs []agent.Event) {
				for _, ev := range evs {
					if ev.Kind == agent.EventToolDone && (!ev.ToolCall.Success || ev.ToolCall.Output == "") {
						t.Errorf("tool done = %+v, want success", ev.ToolCall)
					}
				}
			},
		},
		{
			name:   "confirm denied",
			text:   "[confirm] hi",
			drive:  approve(false),
			shape:  []string{"toolStart", "toolInput", "toolReady", "toolDone", "text", "usage", "end"},
			answer: "echo: [confirm] hi",
			end:    complete,
			check: func(t *testing.T, evs []agent.Event) {
				for _, ev := range evs {
					if ev.Kind == agent.EventToolDone && (ev.ToolCall.Success || ev.ToolCall.Error != "denied") {
						t.Errorf("tool done = %+v, want denied", ev.ToolCall)
					}
				}
			},
		},
		{
			name:  "confirm stopped",
			text:  "[confirm] hi",
			drive: stopAtConfirm,
			shape: []string{"toolStart", "toolInput", "toolReady", "end"},
			end:   agent.End{Outcome: agent.OutcomeCancelled, Point: "c1#1"},
		},
		{
			name:   "slow",
			text:   "[slow] a fairly long prompt to answer",
			shape:  []string{"text", "usage", "end"},
			answer: "echo: [slow] a fairly long prompt to answer",
			end:    complete,
			check: func(t *testing.T, evs []agent.Event) {
				if n := count(evs, agent.EventText); n != slowDeltas {
					t.Errorf("%d deltas, want %d", n, slowDeltas)
				}
			},
		},
		{
			name:   "hold stopped",
			text:   "[hold] hi",
			drive:  stopAfterText,
			shape:  []string{"text", "end"},
			answer: "echo:",
			end:    agent.End{Outcome: agent.OutcomeCancelled, Point: "c1#1"},
			check: func(t *testing.T, evs []agent.Event) {
				if n := count(evs, agent.EventText); n != 1 {
					t.Errorf("%d deltas, want 1", n)
				}
			},
		},
		{
			name:   "error",
			text:   "[error] hi",
			shape:  []string{"text", "end"},
			answer: "echo: [error] hi",
			end:    agent.End{Outcome: agent.OutcomeError, ErrorType: "script", Message: "scripted failure", Point: "c1#1"},
		},
		{
			name:   "error resumable",
			text:   "[error:resumable] hi",
			shape:  []string{"text", "end"},
			answer: "echo: [error:resumable] hi",
			end:    agent.End{Outcome: agent.OutcomeError, ErrorType: "script", Message: "scripted failure", Resumable: true, Point: "c1#1"},
		},
		{
			name:   "prep",
			text:   "[prep] hi",
			shape:  []string{"text", "usage", "end"},
			answer: "echo: [prep] hi",
			end:    complete,
		},
		{
			name:        "host context", // C-TURN-109
			text:        "hi",
			hostContext: "héllo",
			shape:       []string{"text", "usage", "end"},
			answer:      "(context: 5 chars) echo: hi",
			end:         complete,
		},
		{
			name:   "think tool slow",
			text:   "[think][tool][slow] combined markers",
			shape:  []string{"reasoning", "toolStart", "toolInput", "toolReady", "toolDone", "text", "usage", "end"},
			answer: "echo: [think][tool][slow] combined markers",
			end:    complete,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, r := openNew(t, Options{SlowDelay: time.Millisecond}, "c1")
			r.sendTurn(agent.Turn{ID: "t1", Text: tt.text, HostContext: tt.hostContext})
			if tt.drive != nil {
				tt.drive(t, r)
			}
			r.end("t1")
			evs := r.all
			if got := shape(evs); !slices.Equal(got, tt.shape) {
				t.Errorf("shape = %v, want %v (%s)", got, tt.shape, describe(evs))
			}
			if got := answer(evs); got != tt.answer {
				t.Errorf("answer = %q, want %q", got, tt.answer)
			}
			if got := lastEnd(t, evs); !equalEnd(got, tt.end) {
				t.Errorf("end = %+v, want %+v", got, tt.end)
			}
			for i, ev := range evs {
				if ev.TurnID != "t1" {
					t.Errorf("event %d (%s) has TurnID %q", i, kindName(ev.Kind), ev.TurnID)
				}
			}
			if tt.check != nil {
				tt.check(t, evs)
			}
			if got := s.Prompts("c1"); len(got) != 1 || got[0].HostContext != tt.hostContext || got[0].Text != tt.text {
				t.Errorf("Prompts = %+v", got)
			}
		})
	}
}

// TestExit: [exit] kills the conversation's process: one delta, Exited, and
// Events closes; nothing can be sent after.
func TestExit(t *testing.T) {
	_, r := openNew(t, Options{}, "c1")
	r.send("t1", "[exit] bye")
	evs := r.kind(agent.EventExited)
	if got, want := shape(evs), []string{"text", "exited"}; !slices.Equal(got, want) {
		t.Fatalf("shape = %v, want %v", got, want)
	}
	ex := evs[len(evs)-1]
	if ex.Err == nil || ex.TurnID != "t1" {
		t.Errorf("exited = %+v, want an error for t1", ex)
	}
	r.closed()
	if err := r.conv.Send(context.Background(), agent.Turn{ID: "t2", Text: "x"}); err == nil {
		t.Error("Send after exit: no error")
	}
	if err := r.conv.Close(); err != nil {
		t.Errorf("Close after exit: %v", err)
	}
}

func TestResumableError(t *testing.T) {
	for _, tt := range []struct {
		text       string
		resumeEnds agent.Outcome
	}{
		{"[error:resumable] hi", agent.OutcomeComplete},
		{"[error] hi", agent.OutcomeError},
	} {
		t.Run(tt.text, func(t *testing.T) {
			s, r := openNew(t, Options{}, "c1")
			r.send("t1", tt.text)
			if got := lastEnd(t, r.end("t1")); got.Outcome != agent.OutcomeError {
				t.Fatalf("first end = %+v", got)
			}
			r.send("t1", tt.text) // the resume of t1
			got := lastEnd(t, r.end("t1"))
			if got.Outcome != tt.resumeEnds {
				t.Errorf("resumed end = %+v, want %v", got, tt.resumeEnds)
			}
			if tt.resumeEnds == agent.OutcomeComplete {
				// The resumed turn is the same turn of the conversation.
				if got.Point != "c1#1" || len(s.History("c1")) != 1 {
					t.Errorf("point %q, history %q; want c1#1 and one turn", got.Point, s.History("c1"))
				}
				r.send("t1", tt.text) // a third send fails again: resumed once
				if got := lastEnd(t, r.end("t1")); got.Outcome != agent.OutcomeError {
					t.Errorf("third end = %+v, want error", got)
				}
			}
			if n := len(s.Prompts("c1")); n < 2 {
				t.Errorf("%d prompts, want every send", n)
			}
		})
	}
}

// TestSteering checks Steer and Withdraw against each combination of the
// steering and withdraw capabilities.
func TestSteering(t *testing.T) {
	for _, caps := range []agent.Capabilities{
		{Steering: true, Withdraw: true, OneTurnAtATime: true},
		{Steering: true, OneTurnAtATime: true},
		{Withdraw: true, OneTurnAtATime: true},
		{OneTurnAtATime: true},
		{Steering: true, Withdraw: true},
	} {
		t.Run(fmt.Sprintf("steering=%v,withdraw=%v,oneTurn=%v", caps.Steering, caps.Withdraw, caps.OneTurnAtATime), func(t *testing.T) {
			t.Parallel()
			o := Options{Caps: caps, ExactCaps: true, SlowDelay: 50 * time.Millisecond}
			ifSteering := func(r agent.SteerResult) agent.SteerResult {
				if !caps.Steering {
					return agent.SteerUnsupported // C-TURN-49
				}
				return r
			}

			t.Run("nothing running", func(t *testing.T) {
				t.Parallel()
				_, r := openNew(t, o, "c1")
				if got, want := r.conv.Steer(agent.Steering{ID: "s1", Text: "x"}), ifSteering(agent.SteerNotYet); got != want {
					t.Errorf("Steer = %v, want %v", got, want)
				}
			})

			// C-TURN-42, C-TURN-65, C-TURN-66: a turn preparing its prompt
			// declines steering; once the prompt is out it takes it.
			t.Run("preparing", func(t *testing.T) {
				t.Parallel()
				_, r := openNew(t, Options{Caps: caps, ExactCaps: true, SlowDelay: 200 * time.Millisecond}, "c1")
				r.send("t1", "[prep][hold] hi")
				if got, want := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"}), ifSteering(agent.SteerNotYet); got != want {
					t.Errorf("Steer while preparing = %v, want %v", got, want)
				}
				r.kind(agent.EventText)
				if got, want := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"}), ifSteering(agent.SteerTaken); got != want {
					t.Errorf("Steer once running = %v, want %v", got, want)
				}
				r.conv.Stop(context.Background())
				evs := r.end("t1")
				if caps.Steering && !slices.Equal(steeringIDs(evs, agent.EventSteeringReturned), []string{"s1"}) {
					t.Errorf("want s1 returned at the stop: %s", describe(evs))
				}
			})

			// C-TURN-87: the running turn reads the message at its next step.
			t.Run("consumed", func(t *testing.T) {
				t.Parallel()
				_, r := openNew(t, o, "c1")
				r.send("t1", "[slow] a fairly long prompt to answer")
				r.kind(agent.EventText)
				got := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "go left"})
				if want := ifSteering(agent.SteerTaken); got != want {
					t.Fatalf("Steer = %v, want %v", got, want)
				}
				evs := r.end("t1")
				if !caps.Steering {
					if n := count(evs, agent.EventSteeringConsumed) + count(evs, agent.EventSteeringReturned); n != 0 {
						t.Errorf("steering events without steering: %s", describe(evs))
					}
					return
				}
				if got := steeringIDs(evs, agent.EventSteeringConsumed); !slices.Equal(got, []string{"s1"}) {
					t.Errorf("consumed = %v, want [s1]", got)
				}
				if !strings.Contains(answer(r.all), "[steered: go left]") {
					t.Errorf("answer %q lacks the steered delta", answer(r.all))
				}
				if lastEnd(t, evs).Outcome != agent.OutcomeComplete {
					t.Errorf("end = %+v", lastEnd(t, evs))
				}
				// C-TURN-58: a message the model read cannot be withdrawn.
				if r.conv.Withdraw("s1") {
					t.Error("Withdraw of a consumed message = true")
				}
			})

			t.Run("refused", func(t *testing.T) { // C-TURN-85
				t.Parallel()
				_, r := openNew(t, o, "c1")
				r.send("t1", "[hold] hi")
				r.kind(agent.EventText)
				if got, want := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "[refuse] no"}), ifSteering(agent.SteerRefused); got != want {
					t.Errorf("Steer = %v, want %v", got, want)
				}
				r.conv.Stop(context.Background())
				if evs := r.end("t1"); count(evs, agent.EventSteeringReturned) != 0 {
					t.Errorf("a refused message came back: %s", describe(evs))
				}
			})

			t.Run("other turn", func(t *testing.T) {
				t.Parallel()
				_, r := openNew(t, o, "c1")
				r.send("t1", "[hold] hi")
				r.kind(agent.EventText)
				if got, want := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t0", Text: "x"}), ifSteering(agent.SteerNotYet); got != want {
					t.Errorf("Steer for another turn = %v, want %v", got, want)
				}
				r.conv.Stop(context.Background())
				r.end("t1")
			})

			// C-TURN-43, C-TURN-91: a turn that ends before a step reads the
			// message hands it back before its end.
			t.Run("returned", func(t *testing.T) {
				t.Parallel()
				_, r := openNew(t, o, "c1")
				r.send("t1", "[confirm][deaf] hi")
				r.kind(agent.EventToolReady)
				if got, want := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"}), ifSteering(agent.SteerTaken); got != want {
					t.Fatalf("Steer = %v, want %v", got, want)
				}
				// The same message again is not held twice (C-TURN-50).
				r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"})
				if err := r.conv.Confirm("t1", "t1-tool-1", true); err != nil {
					t.Fatal(err)
				}
				evs := r.end("t1")
				want := []string(nil)
				if caps.Steering {
					want = []string{"s1"}
				}
				if got := steeringIDs(evs, agent.EventSteeringReturned); !slices.Equal(got, want) {
					t.Errorf("returned = %v, want %v (%s)", got, want, describe(evs))
				}
				if n := count(evs, agent.EventSteeringConsumed); n != 0 {
					t.Errorf("a deaf turn consumed %d messages", n)
				}
				if caps.Steering {
					if i := slices.IndexFunc(evs, func(ev agent.Event) bool { return ev.Kind == agent.EventSteeringReturned }); i != len(evs)-2 {
						t.Errorf("returned is not right before the end: %s", describe(evs))
					}
				}
				if lastEnd(t, evs).Outcome != agent.OutcomeComplete {
					t.Errorf("end = %+v", lastEnd(t, evs))
				}
			})

			// C-TURN-57, C-TURN-59: a message not read yet can be withdrawn
			// only from a backend that declares Withdraw.
			t.Run("withdraw", func(t *testing.T) {
				t.Parallel()
				_, r := openNew(t, o, "c1")
				r.send("t1", "[hold] hi")
				r.kind(agent.EventText)
				r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"})
				r.conv.Steer(agent.Steering{ID: "s2", TurnID: "t1", Text: "y"})
				wantWithdrawn := caps.Steering && caps.Withdraw
				if got := r.conv.Withdraw("s1"); got != wantWithdrawn {
					t.Errorf("Withdraw(s1) = %v, want %v", got, wantWithdrawn)
				}
				if r.conv.Withdraw("unknown") {
					t.Error("Withdraw(unknown) = true")
				}
				r.conv.Stop(context.Background())
				evs := r.end("t1")
				var want []string
				switch {
				case wantWithdrawn:
					want = []string{"s2"}
				case caps.Steering:
					want = []string{"s1", "s2"}
				}
				if got := steeringIDs(evs, agent.EventSteeringReturned); !slices.Equal(got, want) {
					t.Errorf("returned = %v, want %v", got, want)
				}
				if lastEnd(t, evs).Outcome != agent.OutcomeCancelled {
					t.Errorf("end = %+v", lastEnd(t, evs))
				}
			})
		})
	}
}

// TestQueue: with OneTurnAtATime, turns sent while one runs are held and run
// in order (C-TURN-103, C-TURN-104).
func TestQueue(t *testing.T) {
	s, r := openNew(t, Options{}, "c1")
	r.send("t1", "[confirm] first")
	r.send("t2", "second")
	r.send("t3", "third")
	evs := r.kind(agent.EventToolReady)
	for _, ev := range evs {
		if ev.TurnID != "t1" {
			t.Fatalf("%s ran while t1 waits", ev.TurnID)
		}
	}
	if err := r.conv.Confirm("t1", "t1-tool-1", true); err != nil {
		t.Fatal(err)
	}
	r.end("t3")
	var ends []string
	turnOf := map[string]bool{}
	for _, ev := range r.all {
		if ev.Kind == agent.EventTurnEnd {
			ends = append(ends, ev.TurnID)
			if ev.End.Outcome != agent.OutcomeComplete {
				t.Errorf("%s ended %v", ev.TurnID, ev.End.Outcome)
			}
			turnOf[ev.TurnID] = true
			continue
		}
		if turnOf[ev.TurnID] {
			t.Errorf("%s event after %s ended", kindName(ev.Kind), ev.TurnID)
		}
	}
	if want := []string{"t1", "t2", "t3"}; !slices.Equal(ends, want) {
		t.Errorf("ends = %v, want %v", ends, want)
	}
	if got, want := s.History("c1"), []string{"[confirm] first", "second", "third"}; !slices.Equal(got, want) {
		t.Errorf("History = %q, want %q", got, want)
	}
}

// TestStop: a stop cancels the running turn and every turn held behind it,
// the running one first (C-TURN-105, C-TURN-106); the held ones never ran.
func TestStop(t *testing.T) {
	s, r := openNew(t, Options{}, "c1")
	r.send("t1", "[hold] first")
	r.send("t2", "second")
	r.send("t3", "third")
	r.kind(agent.EventText)
	if err := r.conv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.end("t3")
	var ends []string
	for _, ev := range r.all {
		if ev.TurnID != "t1" && ev.Kind != agent.EventTurnEnd {
			t.Errorf("held turn %s ran: %s", ev.TurnID, kindName(ev.Kind))
		}
		if ev.Kind == agent.EventTurnEnd {
			ends = append(ends, ev.TurnID)
			if ev.End.Outcome != agent.OutcomeCancelled {
				t.Errorf("%s ended %v, want cancelled", ev.TurnID, ev.End.Outcome)
			}
			if ev.TurnID != "t1" && ev.End.Point != "" {
				t.Errorf("held turn %s names point %q", ev.TurnID, ev.End.Point)
			}
		}
	}
	if want := []string{"t1", "t2", "t3"}; !slices.Equal(ends, want) {
		t.Errorf("ends = %v, want %v", ends, want)
	}
	if got, want := s.History("c1"), []string{"[hold] first"}; !slices.Equal(got, want) {
		t.Errorf("History = %q, want %q", got, want)
	}
	if n := len(s.Prompts("c1")); n != 3 {
		t.Errorf("%d prompts, want 3", n)
	}
	// A stop with nothing running changes nothing, and the next turn runs.
	if err := r.conv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.send("t4", "fourth")
	if got := lastEnd(t, r.end("t4")); got.Outcome != agent.OutcomeComplete || got.Point != "c1#2" {
		t.Errorf("t4 end = %+v", got)
	}
}

// TestStopWhilePreparing: C-TURN-107, C-TURN-108: a turn stopped before its
// prompt is out ends unsent.
func TestStopWhilePreparing(t *testing.T) {
	s, r := openNew(t, Options{SlowDelay: time.Hour}, "c1")
	r.send("t1", "[prep] hi")
	r.conv.Stop(context.Background())
	evs := r.end("t1")
	if got, want := shape(evs), []string{"end"}; !slices.Equal(got, want) {
		t.Errorf("shape = %v, want %v", got, want)
	}
	if got := lastEnd(t, evs); got.Outcome != agent.OutcomeCancelled || got.Point != "" {
		t.Errorf("end = %+v, want cancelled with no point", got)
	}
	if got := s.History("c1"); len(got) != 0 {
		t.Errorf("History = %q, want none", got)
	}
}

func TestNotOneTurnAtATime(t *testing.T) {
	_, r := openNew(t, Options{Caps: agent.Capabilities{Steering: true}}, "c1")
	r.send("t1", "[hold] hi")
	if err := r.conv.Send(context.Background(), agent.Turn{ID: "t2", Text: "x"}); err == nil {
		t.Error("Send while a turn runs: no error")
	}
	r.kind(agent.EventText)
	r.conv.Stop(context.Background())
	r.end("t1")
	// The running turn is gone by the time its end is read.
	r.send("t2", "next")
	if got := lastEnd(t, r.end("t2")); got.Outcome != agent.OutcomeComplete {
		t.Errorf("t2 end = %+v", got)
	}
}

func TestConfirmErrors(t *testing.T) {
	_, r := openNew(t, Options{}, "c1")
	if err := r.conv.Confirm("t1", "t1-tool-1", true); err == nil {
		t.Error("Confirm with nothing running: no error")
	}
	r.send("t1", "[confirm] hi")
	r.kind(agent.EventToolReady)
	for _, c := range []struct{ turn, call string }{{"t0", "t1-tool-1"}, {"t1", "t1-tool-2"}} {
		if err := r.conv.Confirm(c.turn, c.call, true); err == nil {
			t.Errorf("Confirm(%s, %s): no error", c.turn, c.call)
		}
	}
	if err := r.conv.Confirm("t1", "t1-tool-1", true); err != nil {
		t.Fatal(err)
	}
	if err := r.conv.Confirm("t1", "t1-tool-1", true); err == nil {
		t.Error("second Confirm: no error")
	}
	r.end("t1")
}

// TestClose: Close ends every wait, closes Events once, and never blocks,
// even on a reader that stopped reading.
func TestClose(t *testing.T) {
	for _, text := range []string{"[hold] hi", "[confirm] hi", "[prep] hi", "[slow] hi"} {
		t.Run(text, func(t *testing.T) {
			s := New(Options{SlowDelay: time.Hour})
			conv, err := s.Open(context.Background(), agent.OpenParams{Mode: agent.OpenNew, ConversationID: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			r := &recorder{t: t, conv: conv}
			r.send("t1", text)
			if err := conv.Close(); err != nil {
				t.Fatal(err)
			}
			if err := conv.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			for range conv.Events() { // drains what was buffered, then ends
			}
			if err := conv.Send(context.Background(), agent.Turn{ID: "t2", Text: "x"}); err == nil {
				t.Error("Send after Close: no error")
			}
		})
	}
	t.Run("unread events", func(t *testing.T) {
		s := New(Options{})
		conv, err := s.Open(context.Background(), agent.OpenParams{Mode: agent.OpenNew, ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 * eventBuffer {
			if err := conv.Send(context.Background(), agent.Turn{ID: fmt.Sprint("t", i), Text: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		closed := make(chan struct{})
		go func() {
			conv.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(deadline):
			t.Fatal("Close blocked on a reader that does not read")
		}
	})
}

// TestConversations checks resume, fork, rewind and delete against the
// history they leave.
func TestConversations(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	r1 := open(t, s, agent.OpenParams{Mode: agent.OpenNew, ConversationID: "c1"})
	points := map[string]string{}
	for i, text := range []string{"one", "two", "three"} {
		id := fmt.Sprint("t", i+1)
		r1.send(id, text)
		points[text] = lastEnd(t, r1.end(id)).Point
	}
	if want := map[string]string{"one": "c1#1", "two": "c1#2", "three": "c1#3"}; !equalMaps(points, want) {
		t.Fatalf("points = %v, want %v", points, want)
	}
	r1.conv.Close()

	history := func(id string, want ...string) {
		t.Helper()
		if got := s.History(id); !slices.Equal(got, want) {
			t.Errorf("History(%s) = %q, want %q", id, got, want)
		}
	}

	// A fork copies the source through the point; the source is untouched.
	r2 := open(t, s, agent.OpenParams{Mode: agent.OpenFork, ConversationID: "c2", Source: "c1", Point: points["two"]})
	history("c2", "one", "two")
	history("c1", "one", "two", "three")
	r2.send("t4", "four")
	if got := lastEnd(t, r2.end("t4")).Point; got != "c2#3" {
		t.Errorf("fork's next point = %q, want c2#3", got)
	}
	history("c2", "one", "two", "four")
	history("c1", "one", "two", "three")

	// A fork of the fork at a point it copied from c1 names the same turn.
	open(t, s, agent.OpenParams{Mode: agent.OpenFork, ConversationID: "c3", Source: "c2", Point: points["one"]})
	history("c3", "one")

	// A rewind cuts back to the point.
	r1 = open(t, s, agent.OpenParams{Mode: agent.OpenRewind, ConversationID: "c1", Point: points["one"]})
	history("c1", "one")
	r1.send("t5", "five")
	if got := lastEnd(t, r1.end("t5")).Point; got != "c1#2" {
		t.Errorf("point after rewind = %q, want c1#2", got)
	}
	history("c1", "one", "five")
	r1.conv.Close()

	// A resume keeps what the conversation holds; an unknown one starts empty.
	open(t, s, agent.OpenParams{Mode: agent.OpenResume, ConversationID: "c1"})
	history("c1", "one", "five")
	open(t, s, agent.OpenParams{Mode: agent.OpenResume, ConversationID: "gone"})
	history("gone")
	if s.History("gone") == nil {
		t.Error("resumed unknown conversation is not kept")
	}

	// OpenNew starts over.
	open(t, s, agent.OpenParams{Mode: agent.OpenNew, ConversationID: "c3"})
	history("c3")

	// Delete forgets; a second delete is an error. Prompts outlive it.
	if err := s.Delete(ctx, "c1", nil); err != nil {
		t.Fatal(err)
	}
	if got := s.History("c1"); got != nil {
		t.Errorf("History after Delete = %q", got)
	}
	if err := s.Delete(ctx, "c1", nil); err == nil {
		t.Error("second Delete: no error")
	}
	if n := len(s.Prompts("c1")); n != 4 {
		t.Errorf("%d prompts on c1, want 4", n)
	}

	// Bad opens.
	for _, p := range []agent.OpenParams{
		{Mode: agent.OpenNew},
		{Mode: agent.OpenFork, ConversationID: "x", Source: "unknown", Point: "unknown#1"},
		{Mode: agent.OpenFork, ConversationID: "x", Source: "c2", Point: "c2#9"},
		{Mode: agent.OpenFork, ConversationID: "x", Source: "c2", Point: "c2#0"},
		{Mode: agent.OpenFork, ConversationID: "x", Source: "c2", Point: "nonsense"},
		{Mode: agent.OpenFork, ConversationID: "x", Source: "c2"},
		{Mode: agent.OpenRewind, ConversationID: "unknown", Point: "unknown#1"},
		{Mode: agent.OpenRewind, ConversationID: "c2", Point: "c2#4"},
		{Mode: agent.OpenMode(99), ConversationID: "x"},
	} {
		if conv, err := s.Open(ctx, p); err == nil {
			conv.Close()
			t.Errorf("Open(%+v): no error", p)
		}
	}
	history("c2", "one", "two", "four")
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCapabilitySwitches: what a Script does not declare it refuses.
func TestCapabilitySwitches(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		off  func(*agent.Capabilities)
		try  func(*Script) error
	}{
		{"fork", func(c *agent.Capabilities) { c.Fork = false }, func(s *Script) error {
			return closeOpened(s.Open(ctx, agent.OpenParams{Mode: agent.OpenFork, ConversationID: "c2", Source: "c1", Point: "c1#1"}))
		}},
		{"rewind", func(c *agent.Capabilities) { c.Rewind = false }, func(s *Script) error {
			return closeOpened(s.Open(ctx, agent.OpenParams{Mode: agent.OpenRewind, ConversationID: "c1", Point: "c1#1"}))
		}},
		{"resume", func(c *agent.Capabilities) { c.Resume = false }, func(s *Script) error {
			return closeOpened(s.Open(ctx, agent.OpenParams{Mode: agent.OpenResume, ConversationID: "c1"}))
		}},
		{"delete", func(c *agent.Capabilities) { c.Delete = false }, func(s *Script) error {
			return s.Delete(ctx, "c1", nil)
		}},
	}
	for _, tt := range tests {
		for _, on := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s=%v", tt.name, on), func(t *testing.T) {
				caps := DefaultCapabilities()
				if !on {
					tt.off(&caps)
				}
				s, r := openNew(t, Options{Caps: caps, ExactCaps: true}, "c1")
				r.send("t1", "hi")
				r.end("t1")
				err := tt.try(s)
				if on && err != nil {
					t.Errorf("declared %s: %v", tt.name, err)
				}
				if !on && err == nil {
					t.Errorf("undeclared %s: no error", tt.name)
				}
			})
		}
	}
}

// closeOpened closes what an Open in a test opened and returns its error.
func closeOpened(conv agent.Conversation, err error) error {
	if err == nil {
		conv.Close()
	}
	return err
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want []string
	}{
		{"abcdef", 3, []string{"ab", "cd", "ef"}},
		{"abcdefg", 3, []string{"ab", "cd", "efg"}},
		{"ab", 3, []string{"a", "b"}},
		{"héé", 3, []string{"h", "é", "é"}},
		{"", 3, []string{""}},
		{"abc", 1, []string{"abc"}},
	} {
		if got := split(tt.s, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// TestLogsBounded: the logs the script agent keeps for tests stay bounded
// however many turns it runs, keeping the newest (a daemon running it for
// long must not grow with every turn).
func TestLogsBounded(t *testing.T) {
	s := New(Options{})
	for i := range 3 * logMax {
		s.recordPrompt(fmt.Sprintf("conv-%d", i), agent.Turn{ID: fmt.Sprintf("t%d", i)})
		s.recordSteer("conv", agent.Steering{}, agent.SteerTaken)
	}
	sent := s.Sent()
	if len(sent) > 2*logMax || sent[len(sent)-1].ID != fmt.Sprintf("t%d", 3*logMax-1) {
		t.Errorf("sent holds %d turns ending %q", len(sent), sent[len(sent)-1].ID)
	}
	if n := len(s.Steers()); n > 2*logMax {
		t.Errorf("steers holds %d", n)
	}
	s.mu.Lock()
	held, order := len(s.prompts), len(s.promptOrder)
	s.mu.Unlock()
	if held > logMax || order != held {
		t.Errorf("prompts of %d conversations (order %d), want at most %d", held, order, logMax)
	}
	if got := s.Prompts(fmt.Sprintf("conv-%d", 3*logMax-1)); len(got) != 1 {
		t.Errorf("the newest conversation's prompts: %v", got)
	}
	if got := s.Prompts("conv-0"); len(got) != 0 {
		t.Errorf("the oldest conversation's prompts are still held: %v", got)
	}
}

// TestHistoryBounded: a long conversation keeps a bounded number of its
// turns in memory, yet counts every one: its points keep counting from its
// start, a fork and a rewind at any point are taken, and its title is its
// first turn's text.
func TestHistoryBounded(t *testing.T) {
	s := New(Options{})
	const turns = 10 * historyKept
	for i := range turns {
		if n, _ := s.admitAs("c1", fmt.Sprintf("t%d", i), fmt.Sprintf("msg %d", i)); n != i+1 {
			t.Fatalf("turn %d has index %d", i, n)
		}
	}
	h := s.History("c1")
	if len(h) < historyKept || len(h) >= 2*historyKept || h[len(h)-1] != fmt.Sprintf("msg %d", turns-1) {
		t.Fatalf("history holds %d turns ending %q", len(h), h[len(h)-1])
	}
	info, ok, err := s.FindConversation(context.Background(), "c1")
	if err != nil || !ok || info.Title != "msg 0" {
		t.Fatalf("FindConversation = %+v %v %v, want the first turn's text", info, ok, err)
	}
	// A fork at an old point, and one at a recent one, count from the
	// conversation's start.
	for _, tt := range []struct {
		id    string
		point int
	}{{"old", 3}, {"recent", turns - 2}} {
		if err := s.prepare(agent.OpenParams{Mode: agent.OpenFork, ConversationID: tt.id, Source: "c1", Point: fmt.Sprintf("c1#%d", tt.point)}); err != nil {
			t.Fatalf("fork at %d: %v", tt.point, err)
		}
		if n, _ := s.admitAs(tt.id, "next", "next"); n != tt.point+1 {
			t.Errorf("fork at %d: the next turn has index %d", tt.point, n)
		}
	}
	if err := s.prepare(agent.OpenParams{Mode: agent.OpenRewind, ConversationID: "c1", Point: "c1#5"}); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if n, _ := s.admitAs("c1", "after", "after"); n != 6 {
		t.Errorf("after a rewind to 5 the next turn has index %d", n)
	}
	if err := s.prepare(agent.OpenParams{Mode: agent.OpenRewind, ConversationID: "c1", Point: "c1#9"}); err == nil {
		t.Error("a rewind past the conversation's end was taken")
	}
}

// admitAs admits a turn of text under id to conversation.
func (s *Script) admitAs(conversation, id, text string) (int, int) {
	s.mu.Lock()
	if s.convs[conversation] == nil {
		s.convs[conversation] = &record{}
	}
	s.mu.Unlock()
	return s.admit(conversation, agent.Turn{ID: id, Text: text})
}
