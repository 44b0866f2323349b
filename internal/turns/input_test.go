package turns

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

func ask(turn, id string) step {
	return on(agentConv, agent.Event{Kind: agent.EventInputRequest, TurnID: turn, Input: &agent.InputRequest{
		ID: id, Message: "Pick a colour",
		Questions: []agent.InputQuestion{{ID: "colour", Kind: agent.InputSingleSelect, Message: "Pick a colour", Required: true,
			Options: []agent.InputOption{{ID: "red", Label: "red"}, {ID: "blue", Label: "blue"}}}},
	}})
}

func selected(option string) map[string]ahp.ChatInputAnswer {
	v, _ := json.Marshal(option)
	return map[string]ahp.ChatInputAnswer{"colour": {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "selected", Value: v}}}
}

// TestInputRequests: a backend's input request is said as an inputRequest
// part of the running turn; a client's answer is said to every client and
// handed to the backend, with the drafts synced before it; an answer to no
// open request, or with a response AHP does not name, is refused.
func TestInputRequests(t *testing.T) {
	runRules(t, []rule{
		{
			id:    "asked",
			what:  "the backend's request is an inputRequest part; the chat needs input",
			steps: []step{start("t1", "hi"), mark, ask("t1", "q1")},
			want:  []string{"tell inputRequested"},
			check: func(t *testing.T, h *harness) {
				a, ok := lastTold[ahp.ChatInputRequested](h)
				if !ok || a.Request.ID != "q1" || len(a.Request.Questions) != 1 || len(a.Request.Questions[0].Options) != 2 {
					t.Fatalf("told %+v, want request q1 with its question and two options", a)
				}
				if q := a.Request.Questions[0]; q.Kind != "single-select" || q.Required == nil || !*q.Required {
					t.Errorf("question %+v, want a required single-select", q)
				}
				if st := h.e.State(); st.Status&ahp.StatusInputNeeded != ahp.StatusInputNeeded {
					t.Errorf("status %v, want InputNeeded", st.Status)
				}
			},
		},
		{
			id:    "answered",
			what:  "the answer is said, then handed to the backend with its value",
			steps: []step{start("t1", "hi"), ask("t1", "q1"), mark, client(ahp.ChatInputCompleted{RequestID: "q1", Response: "accept", Answers: selected("red")})},
			want:  []string{"tell inputCompleted by c1", "answered t1 q1 accept map[colour:{red"},
		},
		{
			id:   "drafts",
			what: "an accept without answers hands the drafts clients synced",
			steps: []step{start("t1", "hi"), ask("t1", "q1"),
				client(ahp.ChatInputAnswerChanged{RequestID: "q1", QuestionID: "colour", Answer: ptr(selected("blue")["colour"])}),
				mark, client(ahp.ChatInputCompleted{RequestID: "q1", Response: "accept"})},
			want: []string{"tell inputCompleted by c1", "answered t1 q1 accept map[colour:{blue"},
		},
		{
			id:    "declined",
			what:  "a decline carries no values",
			steps: []step{start("t1", "hi"), ask("t1", "q1"), mark, client(ahp.ChatInputCompleted{RequestID: "q1", Response: "decline", Answers: selected("red")})},
			want:  []string{"tell inputCompleted by c1", "answered t1 q1 decline map[]"},
		},
		{
			id:    "twice",
			what:  "a second answer finds no open request",
			steps: []step{start("t1", "hi"), ask("t1", "q1"), client(ahp.ChatInputCompleted{RequestID: "q1", Response: "accept", Answers: selected("red")}), mark, client(ahp.ChatInputCompleted{RequestID: "q1", Response: "accept", Answers: selected("blue")})},
			want:  []string{"refuse inputCompleted by c1: " + ReasonNoInputRequest},
			none:  []string{"answered"},
		},
		{
			id:    "unknown",
			what:  "an answer to a request nobody made is refused",
			steps: []step{start("t1", "hi"), mark, client(ahp.ChatInputCompleted{RequestID: "nope", Response: "accept"})},
			want:  []string{"refuse inputCompleted by c1: " + ReasonNoInputRequest},
			none:  []string{"answered", "tell inputCompleted"},
		},
		{
			id:    "bad response",
			what:  "a response other than accept, decline or cancel is refused",
			steps: []step{start("t1", "hi"), ask("t1", "q1"), mark, client(ahp.ChatInputCompleted{RequestID: "q1", Response: "maybe"})},
			want:  []string{"refuse inputCompleted by c1: " + ReasonBadInputResponse},
			none:  []string{"answered", "tell inputCompleted"},
		},
		{
			id:    "no id",
			what:  "a request without an id is not said",
			steps: []step{start("t1", "hi"), mark, ask("t1", "")},
			want:  []string{"warn input request without an id"},
			none:  []string{"tell inputRequested"},
		},
	})
}

func ptr[T any](v T) *T { return &v }
