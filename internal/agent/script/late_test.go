package script

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// TestLate: a [late] turn takes steering, never reads it, and hands it back
// only after its end: before the next turn sent runs, or LateDelay after
// the end (C-TURN-43, C-TURN-44, C-TURN-98: a message handed back after the
// turn it was meant for ended).
func TestLate(t *testing.T) {
	for _, next := range []bool{true, false} {
		name := map[bool]string{true: "next turn", false: "delay"}[next]
		t.Run(name, func(t *testing.T) {
			o := Options{LateDelay: 50 * time.Millisecond}
			if next {
				o.LateDelay = time.Hour
			}
			_, r := openNew(t, o, "c1")
			r.send("t1", "[late][confirm] hi")
			r.kind(agent.EventToolReady)
			if got := r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"}); got != agent.SteerTaken {
				t.Fatalf("Steer = %v", got)
			}
			if err := r.conv.Confirm("t1", "t1-tool-1", true); err != nil {
				t.Fatal(err)
			}
			evs := r.end("t1")
			if n := count(evs, agent.EventSteeringReturned) + count(evs, agent.EventSteeringConsumed); n != 0 {
				t.Fatalf("steering settled before the end: %s", describe(evs))
			}
			if strings.Contains(answer(evs), "[steered") {
				t.Fatalf("a [late] turn read its steering: %q", answer(evs))
			}
			if next {
				r.send("t2", "next")
			}
			evs = r.kind(agent.EventSteeringReturned)
			if got := evs[len(evs)-1]; got.SteeringID != "s1" || got.TurnID != "t1" {
				t.Fatalf("returned %+v, want s1 of t1", got)
			}
			if next {
				if len(evs) != 1 {
					t.Fatalf("t2 ran before the steering came back: %s", describe(evs))
				}
				r.end("t2")
			}
		})
	}
}

// TestStubborn: a [stubborn] turn goes on after a stop, answers the tool
// call it was stopped in and says more, then ends cancelled (C-TURN-15,
// C-TURN-16: what the host must drop).
func TestStubborn(t *testing.T) {
	_, r := openNew(t, Options{SlowDelay: 10 * time.Millisecond}, "c1")
	r.send("t1", "[confirm][stubborn] hi")
	r.kind(agent.EventToolReady)
	if err := r.conv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := r.end("t1")
	if got, want := shape(evs), []string{"toolDone", "text", "end"}; !slices.Equal(got, want) {
		t.Fatalf("after the stop: %v, want %v (%s)", got, want, describe(evs))
	}
	if done := evs[0].ToolCall; done == nil || !done.Success || done.ID != "t1-tool-1" {
		t.Fatalf("tool answered %+v", done)
	}
	if got := lastEnd(t, evs); got.Outcome != agent.OutcomeCancelled {
		t.Fatalf("end = %+v", got)
	}
}

// TestLogs: Sent, Steers and Opens log what tests look for, over every
// conversation.
func TestLogs(t *testing.T) {
	s, r := openNew(t, Options{}, "c1")
	r.send("t1", "[confirm] hi")
	r.kind(agent.EventToolReady)
	r.conv.Steer(agent.Steering{ID: "s1", TurnID: "t1", Text: "x"})
	r.conv.Steer(agent.Steering{ID: "s2", TurnID: "t0", Text: "y"})
	r.conv.Confirm("t1", "t1-tool-1", true)
	r.end("t1")
	open(t, s, agent.OpenParams{Mode: agent.OpenResume, ConversationID: "c1"})
	if got := s.Opens(); len(got) != 2 || got[0].Conversation != "c1" || got[0].Mode != agent.OpenNew || got[1].Conversation != "c1" || got[1].Mode != agent.OpenResume {
		t.Errorf("Opens = %+v", got)
	}
	if got := s.Sent(); len(got) != 1 || got[0].ID != "t1" {
		t.Errorf("Sent = %+v", got)
	}
	got := s.Steers()
	if len(got) != 2 || got[0].Result != agent.SteerTaken || got[1].Result != agent.SteerNotYet || got[0].Conversation != "c1" {
		t.Errorf("Steers = %+v", got)
	}
}

// TestResumedAttempts: a resumed attempt names its parts apart from the
// attempts before it, and a resumable failure in one conversation resumes
// nothing in another that uses the same turn id.
func TestResumedAttempts(t *testing.T) {
	s, r := openNew(t, Options{}, "c1")
	r.send("t1", "[error:resumable] hi")
	if first := r.end("t1"); first[0].PartID != "t1-md-1" {
		t.Fatalf("first part %q", first[0].PartID)
	}
	other := open(t, s, agent.OpenParams{Mode: agent.OpenNew, ConversationID: "c2"})
	other.send("t1", "[error:resumable] hi")
	if got := lastEnd(t, other.end("t1")); got.Outcome != agent.OutcomeError {
		t.Fatalf("c2's t1 taken for a resume: %+v", got)
	}
	r.send("t1", "[error:resumable] hi")
	evs := r.end("t1")
	if evs[0].PartID != "t1-r1-md-1" || lastEnd(t, evs).Outcome != agent.OutcomeComplete {
		t.Fatalf("resumed attempt: %s", describe(evs))
	}
}
