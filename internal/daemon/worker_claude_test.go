package daemon_test

import (
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
)

// TestClaudeWorkerChat: with the real CLI against the fake, a turn whose
// model calls the CLI's subagent tool runs the subagent in a worker chat
// (C-CHAT-12, C-SUB-01): announced on the session (C-SUB-07), opaque and
// made from the root chat and the call (C-SUB-03), its turn opened with
// the prompt the model wrote (C-SUB-08) and answered by the subagent's own
// request to the fake; the chat's origin names the call (C-SUB-16) and the
// call's result names the chat (C-SUB-17); a person's turn there is
// refused (C-SUB-09).
func TestClaudeWorkerChat(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	const sess = "ahp-session:/c1a0de00-0000-4000-8000-0000000000a1"
	def, _ := ce.session(a, sess)
	a.Subscribe(def)
	const prompt = "say hello from the worker"
	if end := sendTurn(t, a, def, "t1", "[task:"+prompt+"]"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended %s: %s", end.Type(), end.Action)
	}
	sum := awaitWorkerAdded(t, a, sess, "")
	call := sum.Origin.ToolCallID
	if sum.Origin.Chat != def || call == "" || sum.Interactivity != ahp.InteractivityReadOnly {
		t.Fatalf("worker chat summary %+v origin %+v", sum, sum.Origin)
	}
	if p, err := ahp.ParseChatURI(sum.Resource); err != nil || p.Kind != ahp.ChatURIOpaque {
		t.Fatalf("worker chat URI %s", sum.Resource)
	}
	st := workerTurn(t, a, sum.Resource)
	tr := st.Turns[0]
	if tr.Message.Text != prompt || tr.State != ahp.TurnComplete {
		t.Fatalf("worker turn %s opened with %q: %s", tr.State, tr.Message.Text, clJSON(t, tr))
	}
	if got := clMarkdown(tr); !strings.Contains(got, "fake reply: "+prompt) {
		t.Fatalf("worker answered %q", got)
	}
	root := turnOf(t, chatOf(t, a, def), "t1")
	tc := toolCallOf(t, root, call)
	if subagentContentOf(tc) != sum.Resource || (tc.ToolName != "Task" && tc.ToolName != "Agent") {
		t.Fatalf("spawning call %s", clJSON(t, tc))
	}
	// The subagent asked the fake itself, with the prompt the model wrote.
	asked := false
	for _, r := range ce.fake.Requests(t) {
		if !r.IsMessages() {
			continue
		}
		for _, m := range r.Messages() {
			if m.Role == "user" && strings.TrimSpace(strings.Join(m.Texts(), " ")) == prompt {
				asked = true
			}
		}
	}
	if !asked {
		t.Fatal("the fake saw no request of the subagent")
	}
	awaitRefused(t, a, startTurn(a, sum.Resource, "p1", "hello"), "This chat is read-only.")
}

// TestClaudeWorkerStop: the CLI offers no stop of one subagent over
// stream-json, so a stop in a worker chat is handed to the backend as a
// stop of the turn the worker runs in (C-SUB-13): the worker's turn and the
// turn that spawned it end cancelled, the workers of the stopped turn with
// it (C-TURN-72), and the next turn runs.
func TestClaudeWorkerStop(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	const sess = "ahp-session:/c1a0de00-0000-4000-8000-0000000000a2"
	def, _ := ce.session(a, sess)
	a.Subscribe(def)
	startTurn(a, def, "t1", "[task:[slow] keep going]")
	sum := awaitWorkerAdded(t, a, sess, "")
	st := chatOf(t, a, sum.Resource)
	if st.ActiveTurn == nil {
		t.Fatalf("worker chat has no running turn: %s", clJSON(t, st))
	}
	awaitAccepted(t, a, stopTurn(a, sum.Resource, st.ActiveTurn.ID))
	if end := awaitEnd(t, a, sum.Resource, st.ActiveTurn.ID); end.Type() != "chat/turnCancelled" {
		t.Fatalf("worker turn ended %s", end.Raw)
	}
	if end := awaitEnd(t, a, def, "t1"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("spawning turn ended %s", end.Raw)
	}
	if end := sendTurn(t, a, def, "t2", "still here"); end.Type() != "chat/turnComplete" {
		t.Fatalf("next turn ended %s", end.Raw)
	}
}
