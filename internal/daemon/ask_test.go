package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

func inputCompleted(requestID, response, option string) map[string]any {
	a := map[string]any{"type": "chat/inputCompleted", "requestId": requestID, "response": response}
	if option != "" {
		a["answers"] = map[string]any{"colour": map[string]any{"state": "submitted", "value": map[string]any{"kind": "selected", "value": option}}}
	}
	return a
}

// TestInputRequestOverTheWire: an agent's question ([ask]) reaches every
// client as chat/inputRequested and the chat needs input; an answer from a
// token without chat:answer, one with a response AHP does not name, and a
// second answer are refused, and so are a draft without chat:answer and a
// draft for a request that does not wait (none asked it, or answered),
// each on a connection that stays up; the
// answer of a client that may answer ends the turn with what it picked,
// and the stored turn keeps the answered request.
func TestInputRequestOverTheWire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "reader-token", Principal: "user:reader", Grants: []string{"chat:turns", "session:read"}}}
	})
	owner := e.client("owner")
	sess, def := e.createSession(owner, "ahp-session:/9a9a9a9a-0000-4000-8000-0000000000a5")
	owner.Subscribe(def)
	other := e.client("other")
	other.Subscribe(def)
	reader := ahptest.Dial(t, e.d.URL(), "reader-token")
	reader.Initialize("reader", ahp.RootURI)
	reader.Subscribe(sess)
	reader.Subscribe(def)

	owner.Dispatch(def, turnStarted("t1", "[ask] colours"))
	for _, c := range []*ahptest.Client{owner, other, reader} {
		env := c.AwaitAction(def, "chat/inputRequested")
		var req ahp.ChatInputRequest
		if err := env.Field("request", &req); err != nil {
			t.Fatal(err)
		}
		if req.ID != "t1-ask-1" || req.Message != "Pick a colour" || len(req.Questions) != 1 || len(req.Questions[0].Options) != 2 {
			t.Fatalf("the request reads %+v", req)
		}
	}
	if st := chatOf(t, other, def); st.Status&ahp.StatusInputNeeded != ahp.StatusInputNeeded {
		t.Errorf("the chat's status is %v while the agent asks, want InputNeeded", st.Status)
	}

	draft := func(request string) map[string]any {
		return map[string]any{"type": "chat/inputAnswerChanged", "requestId": request, "questionId": "colour",
			"answer": map[string]any{"state": "draft", "value": map[string]any{"kind": "selected", "value": "blue"}}}
	}
	if env := reader.AwaitEcho(reader.Dispatch(def, draft("t1-ask-1"))); !strings.Contains(env.RejectionReason, "chat:answer") {
		t.Errorf("a draft without chat:answer: rejection %q, want one naming the grant", env.RejectionReason)
	}
	if env := other.AwaitEcho(other.Dispatch(def, draft("no-such-request"))); env.RejectionReason == "" {
		t.Error("a draft for a request nobody asked was taken")
	}
	if env := other.AwaitEcho(other.Dispatch(def, draft("t1-ask-1"))); env.RejectionReason != "" {
		t.Errorf("a draft for the open request was refused: %s", env.RejectionReason)
	}
	if env := reader.AwaitEcho(reader.Dispatch(def, inputCompleted("t1-ask-1", "accept", "blue"))); !strings.Contains(env.RejectionReason, "chat:answer") {
		t.Errorf("an answer without chat:answer: rejection %q, want one naming the grant", env.RejectionReason)
	}
	if env := other.AwaitEcho(other.Dispatch(def, inputCompleted("t1-ask-1", "maybe", ""))); env.RejectionReason == "" {
		t.Error("an answer with the response \"maybe\" was taken")
	}
	if env := other.AwaitEcho(other.Dispatch(def, inputCompleted("t1-ask-1", "accept", "red"))); env.RejectionReason != "" {
		t.Fatalf("the answer was refused: %s", env.RejectionReason)
	}
	if env := awaitEnd(t, owner, def, "t1"); env.Type() != "chat/turnComplete" {
		t.Fatalf("the asked turn ended %s", env.Type())
	}
	if env := other.AwaitEcho(other.Dispatch(def, inputCompleted("t1-ask-1", "accept", "blue"))); env.RejectionReason == "" {
		t.Error("a second answer, after the turn ended, was taken")
	}
	if env := other.AwaitEcho(other.Dispatch(def, draft("t1-ask-1"))); env.RejectionReason == "" {
		t.Error("a draft for an answered request was taken")
	}
	st := chatOf(t, reader, def)
	if len(st.Turns) != 1 {
		t.Fatalf("%d turns", len(st.Turns))
	}
	var answer string
	var asked *ahp.ResponsePart
	for i, p := range st.Turns[0].ResponseParts {
		switch p.Kind {
		case ahp.PartMarkdown:
			answer += p.Content
		case ahp.PartInputRequest:
			asked = &st.Turns[0].ResponseParts[i]
		}
	}
	if answer != "You picked red" {
		t.Errorf("the turn answers %q, want \"You picked red\"", answer)
	}
	if asked == nil || asked.Response != "accept" || asked.Request == nil || string(asked.Request.Answers["colour"].Value.Value) != `"red"` {
		t.Errorf("the stored request is %+v, want it answered accept with red", asked)
	}
}
