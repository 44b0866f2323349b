package script

import (
	"context"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

// askedRequest reads until the turn's input request and returns it.
func askedRequest(t *testing.T, r *recorder) *agent.InputRequest {
	t.Helper()
	evs := r.kind(agent.EventInputRequest)
	in := evs[len(evs)-1].Input
	if in == nil {
		t.Fatalf("input request event without its request: %s", describe(evs))
	}
	return in
}

// TestAskAnswersWithThePickedOption: [ask] asks "Pick a colour" with a
// single-select of red and blue and waits; the answer names the option
// picked, or the response when declined or cancelled.
func TestAskAnswersWithThePickedOption(t *testing.T) {
	tests := []struct {
		name   string
		answer agent.InputAnswer
		want   string
	}{
		{"red", agent.InputAnswer{Response: agent.InputAccept, Values: map[string]agent.InputValue{"colour": {Text: "red"}}}, "You picked red"},
		{"blue", agent.InputAnswer{Response: agent.InputAccept, Values: map[string]agent.InputValue{"colour": {Text: "blue"}}}, "You picked blue"},
		{"typed instead", agent.InputAnswer{Response: agent.InputAccept, Values: map[string]agent.InputValue{"colour": {Freeform: []string{"green"}}}}, "You picked green"},
		{"declined", agent.InputAnswer{Response: agent.InputDecline}, "You picked nothing (decline)"},
		{"cancelled", agent.InputAnswer{Response: agent.InputCancel}, "You picked nothing (cancel)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, r := openNew(t, Options{}, "c1")
			r.send("t1", "[ask] hi")
			in := askedRequest(t, r)
			if in.ID != "t1-ask-1" || in.Message != "Pick a colour" || len(in.Questions) != 1 {
				t.Fatalf("request = %+v, want t1-ask-1 \"Pick a colour\" with one question", in)
			}
			q := in.Questions[0]
			if q.ID != "colour" || q.Kind != agent.InputSingleSelect || len(q.Options) != 2 || q.Options[0].Label != "red" || q.Options[1].Label != "blue" {
				t.Fatalf("question = %+v, want a single-select of red and blue", q)
			}
			if err := r.conv.(agent.InputAnswerer).InputAnswered("t1", in.ID, tc.answer); err != nil {
				t.Fatalf("InputAnswered: %v", err)
			}
			evs := r.end("t1")
			if got := answer(evs); got != tc.want {
				t.Errorf("answer = %q, want %q", got, tc.want)
			}
			if end := lastEnd(t, evs); end.Outcome != agent.OutcomeComplete {
				t.Errorf("end = %+v, want complete", end)
			}
		})
	}
}

// TestAskRefusesAnswersItDidNotAsk: an answer for another turn, another
// request, or a second answer, is an error; a stop ends the waiting turn
// cancelled.
func TestAskRefusesAnswersItDidNotAsk(t *testing.T) {
	_, r := openNew(t, Options{}, "c1")
	answerer := r.conv.(agent.InputAnswerer)
	accept := agent.InputAnswer{Response: agent.InputAccept, Values: map[string]agent.InputValue{"colour": {Text: "red"}}}
	if err := answerer.InputAnswered("t1", "t1-ask-1", accept); err == nil {
		t.Error("an answer with nothing running: no error")
	}
	r.send("t1", "[ask] hi")
	in := askedRequest(t, r)
	for _, c := range []struct{ turn, req string }{{"t0", in.ID}, {"t1", "t1-ask-2"}} {
		if err := answerer.InputAnswered(c.turn, c.req, accept); err == nil {
			t.Errorf("InputAnswered(%s, %s): no error", c.turn, c.req)
		}
	}
	if err := r.conv.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if end := lastEnd(t, r.end("t1")); end.Outcome != agent.OutcomeCancelled {
		t.Errorf("a stopped ask ended %+v, want cancelled", end)
	}
	if err := answerer.InputAnswered("t1", in.ID, accept); err == nil {
		t.Error("an answer after the stop: no error")
	}
}
