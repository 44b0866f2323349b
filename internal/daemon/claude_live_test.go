package daemon_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/claude"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestClaudeLiveTurns drives one claude chat through the daemon's
// websocket with the real CLI: text streams; a tool call that needs
// permission waits until a second client confirms it; a client stop ends
// the turn cancelled and the same CLI process answers the next turn; a
// steering message sent while a tool call waits lands in that turn; a
// queued message runs after the turn it waited for. The subtests run in
// order on one chat.
func TestClaudeLiveTurns(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	const sess = "ahp-session:/c1a0de00-0000-4000-8000-000000000001"
	def, conv := ce.session(a, sess)
	a.Subscribe(def)
	// b may answer tool calls; r may only read.
	b := ce.dial("b", answererToken)
	b.Subscribe(def)
	r := ce.dial("r", readerToken)
	r.Subscribe(def)

	t.Run("text streams", func(t *testing.T) {
		end := sendTurn(t, a, def, "t1", "hello there")
		if end.Type() != "chat/turnComplete" {
			t.Fatalf("t1 ended with %s: %s", end.Type(), end.Action)
		}
		parts, deltas := 0, 0
		for _, env := range clTurnEnvs(a, def, "t1") {
			switch env.Type() {
			case "chat/responsePart":
				parts++
			case "chat/delta":
				deltas++
			}
		}
		if parts != 1 || deltas < 1 {
			t.Errorf("t1 streamed %d parts and %d deltas, want one markdown part and deltas", parts, deltas)
		}
		cs := chatOf(t, a, def)
		if got := clMarkdown(cs.Turns[0]); got != "fake reply: hello there" {
			t.Errorf("t1 answered %q", got)
		}
		if u := cs.Turns[0].Usage; u == nil || u.InputTokens == 0 || u.OutputTokens == 0 {
			t.Errorf("t1 usage %+v", u)
		}
	})

	t.Run("tool call confirmed by a second client", func(t *testing.T) {
		made := filepath.Join(ce.workDir, "made.txt")
		a.Dispatch(def, turnStarted("t2", "make a file [bash:touch made.txt]"))
		call := clAwaitAsk(t, b, def, "t2")
		if clExists(made) {
			t.Fatal("the tool ran before anybody confirmed it")
		}
		if cs := chatOf(t, b, def); !cs.Status.Has(ahp.StatusInputNeeded) {
			t.Errorf("chat status while the call waits = %v, want input needed", cs.Status)
		}
		confirm := map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t2", "toolCallId": call, "approved": true}
		// A client without chat:answer is refused, and nothing runs.
		if env := r.AwaitEcho(r.Dispatch(def, confirm)); !strings.Contains(env.RejectionReason, "chat:answer") {
			t.Fatalf("confirmation by a reader: rejection %q, want one naming chat:answer", env.RejectionReason)
		}
		if clExists(made) {
			t.Fatal("a refused confirmation ran the tool")
		}
		if env := b.AwaitEcho(b.Dispatch(def, confirm)); env.RejectionReason != "" {
			t.Fatalf("confirmation refused: %s", env.RejectionReason)
		}
		done := clAwaitAction(t, a, def, "t2", "chat/toolCallComplete")
		var res ahp.ToolCallResult
		if err := done.Field("result", &res); err != nil || !res.Success {
			t.Errorf("tool call result %s (%v)", done.Action, err)
		}
		if end := awaitEnd(t, a, def, "t2"); end.Type() != "chat/turnComplete" {
			t.Fatalf("t2 ended with %s: %s", end.Type(), end.Action)
		}
		if !clExists(made) {
			t.Error("the confirmed tool did not run")
		}
		cs := chatOf(t, a, def)
		t2 := cs.Turns[1]
		calls := clToolCalls(t2)
		if len(calls) != 1 || calls[0].Status != ahp.ToolCompleted || calls[0].Success == nil || !*calls[0].Success {
			t.Errorf("t2 tool calls %s", clJSON(t, calls))
		}
		if got := clMarkdown(t2); got != "tool done" {
			t.Errorf("t2 answered %q", got)
		}
	})

	t.Run("stop mid-stream keeps the process", func(t *testing.T) {
		before := ce.processes()
		a.Dispatch(def, turnStarted("t3", "talk slowly [slow]"))
		clAwaitAction(t, a, def, "t3", "chat/delta")
		seq := a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t3"})
		if env := a.AwaitEcho(seq); env.RejectionReason != "" {
			t.Fatalf("stop refused: %s", env.RejectionReason)
		}
		if end := awaitEnd(t, a, def, "t3"); end.Type() != "chat/turnCancelled" {
			t.Fatalf("t3 ended with %s", end.Type())
		}
		n := len(clTurnEnvs(a, def, "t3"))
		end := sendTurn(t, a, def, "t4", "after the stop")
		if end.Type() != "chat/turnComplete" {
			t.Fatalf("t4 ended with %s: %s", end.Type(), end.Action)
		}
		cs := chatOf(t, a, def)
		if got := clMarkdown(cs.Turns[3]); got != "fake reply: after the stop" {
			t.Errorf("t4 answered %q", got)
		}
		// C-TURN-70: the same process answered.
		if got := ce.processes(); got != before {
			t.Errorf("%d CLI processes after the stop, %d before", got, before)
		}
		// C-TURN-17: what the CLI said after the stop reached no client.
		if got := len(clTurnEnvs(a, def, "t3")); got != n {
			t.Errorf("%d envelopes of t3 after its end", got-n)
		}
		if st := cs.Turns[2].State; st != ahp.TurnCancelled {
			t.Errorf("t3 reads %s", st)
		}
	})

	t.Run("steering at a tool call lands in the turn", func(t *testing.T) {
		a.Dispatch(def, turnStarted("t5", "make another [bash:touch steer.txt]"))
		call := clAwaitAsk(t, b, def, "t5")
		seq := a.Dispatch(def, clPending(ahp.PendingSteering, "s1", "STEER at the tool"))
		if env := a.AwaitEcho(seq); env.RejectionReason != "" {
			t.Fatalf("steering refused: %s", env.RejectionReason)
		}
		b.AwaitEcho(b.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t5", "toolCallId": call, "approved": true}))
		removed := a.AwaitEnvelope("the steering message taken out", func(env ahptest.Envelope) bool {
			var id string
			_ = env.Field("id", &id)
			return env.Channel == def && env.Type() == "chat/pendingMessageRemoved" && id == "s1"
		})
		if removed.Origin != nil {
			t.Errorf("the host's removal carries an origin: %s", removed.Raw)
		}
		end := awaitEnd(t, a, def, "t5")
		if end.Type() != "chat/turnComplete" {
			t.Fatalf("t5 ended with %s", end.Type())
		}
		if removed.ServerSeq > end.ServerSeq {
			t.Error("the steering message was taken out after its turn ended")
		}
		// The model read it inside the turn, and no turn opened for it.
		if !ce.requestSays(conv, "STEER at the tool") {
			t.Error("the steering message never reached the model")
		}
		for _, env := range a.Envelopes() {
			var q string
			if env.Type() == "chat/turnStarted" && env.Field("queuedMessageId", &q) == nil && q == "s1" {
				t.Errorf("a turn opened for the steering message: %s", env.Action)
			}
		}
		cs := chatOf(t, a, def)
		if cs.SteeringMessage != nil || len(cs.Turns) != 5 || clMarkdown(cs.Turns[4]) != "tool done" {
			t.Errorf("after t5: steering %+v, %d turns, t5 answered %q", cs.SteeringMessage, len(cs.Turns), clMarkdown(cs.Turns[len(cs.Turns)-1]))
		}
	})

	t.Run("queued message runs after", func(t *testing.T) {
		a.Dispatch(def, turnStarted("t6", "talk slowly again [slow]"))
		clAwaitAction(t, a, def, "t6", "chat/delta")
		if env := a.AwaitEcho(a.Dispatch(def, clPending(ahp.PendingQueued, "q1", "queued words"))); env.RejectionReason != "" {
			t.Fatalf("queued message refused: %s", env.RejectionReason)
		}
		end6 := awaitEnd(t, a, def, "t6")
		if end6.Type() != "chat/turnComplete" {
			t.Fatalf("t6 ended with %s", end6.Type())
		}
		started := a.AwaitEnvelope("the queued message's turn", func(env ahptest.Envelope) bool {
			var q string
			return env.Channel == def && env.Type() == "chat/turnStarted" && env.Field("queuedMessageId", &q) == nil && q == "q1"
		})
		if started.ServerSeq < end6.ServerSeq {
			t.Error("the queued message started before the turn it waited for ended")
		}
		var id string
		if err := started.Field("turnId", &id); err != nil {
			t.Fatal(err)
		}
		if end := awaitEnd(t, a, def, id); end.Type() != "chat/turnComplete" {
			t.Fatalf("queued turn ended with %s", end.Type())
		}
		cs := chatOf(t, a, def)
		last := cs.Turns[len(cs.Turns)-1]
		if last.Message.Text != "queued words" || clMarkdown(last) != "fake reply: queued words" || len(cs.QueuedMessages) != 0 {
			t.Errorf("queued turn %q answered %q; queue %v", last.Message.Text, clMarkdown(last), cs.QueuedMessages)
		}
		if got := clMarkdown(cs.Turns[len(cs.Turns)-2]); !strings.HasPrefix(got, "slow slow") {
			t.Errorf("t6 answered %q", got)
		}
	})

	t.Run("steering held at a stop runs as a turn of its own", func(t *testing.T) {
		a.Dispatch(def, turnStarted("t7", "talk slowly once more [slow]"))
		clAwaitAction(t, a, def, "t7", "chat/delta")
		if env := a.AwaitEcho(a.Dispatch(def, clPending(ahp.PendingSteering, "s2", "steer then stop"))); env.RejectionReason != "" {
			t.Fatalf("steering refused: %s", env.RejectionReason)
		}
		a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t7"})
		stopped := awaitEnd(t, a, def, "t7")
		if stopped.Type() != "chat/turnCancelled" {
			t.Fatalf("t7 ended with %s", stopped.Type())
		}
		started := a.AwaitEnvelope("the held steering message's turn", func(env ahptest.Envelope) bool {
			var q string
			return env.Channel == def && env.Type() == "chat/turnStarted" && env.Field("queuedMessageId", &q) == nil && q == "s2"
		})
		if started.ServerSeq < stopped.ServerSeq || started.Origin != nil {
			t.Errorf("the steering turn started at seq %d (stop at %d), origin %+v", started.ServerSeq, stopped.ServerSeq, started.Origin)
		}
		var id string
		var msg ahp.Message
		if started.Field("turnId", &id) != nil || started.Field("message", &msg) != nil || msg.Text != "steer then stop" {
			t.Fatalf("steering turn %s", started.Action)
		}
		if end := awaitEnd(t, a, def, id); end.Type() != "chat/turnComplete" {
			t.Fatalf("the steering turn ended with %s", end.Type())
		}
		cs := chatOf(t, a, def)
		if got := clMarkdown(cs.Turns[len(cs.Turns)-1]); got != "fake reply: steer then stop" {
			t.Errorf("the steering turn answered %q", got)
		}
	})

	// One process served the whole chat.
	if n := ce.processes(); n != 1 {
		t.Errorf("%d CLI processes for one chat", n)
	}
}

// TestClaudeStopEndsQuery: with the backend's stopEnds set to "query" a
// client's stop ends the CLI process; the next turn goes to a new CLI that
// resumes the conversation.
func TestClaudeStopEndsQuery(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsQuery)
	a := ce.client("a")
	def, conv := ce.session(a, "ahp-session:/c1a0de00-0000-4000-8000-000000000004")
	a.Subscribe(def)
	if end := sendTurn(t, a, def, "t1", "remember me"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t1 ended with %s", end.Type())
	}
	a.Dispatch(def, turnStarted("t2", "talk slowly [slow]"))
	clAwaitAction(t, a, def, "t2", "chat/delta")
	a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t2"})
	if end := awaitEnd(t, a, def, "t2"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t2 ended with %s", end.Type())
	}
	if end := sendTurn(t, a, def, "t3", "after the stop"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t3 ended with %s: %s", end.Type(), end.Action)
	}
	if n := ce.processes(); n != 2 {
		t.Errorf("%d CLI processes, want a second one after the stop", n)
	}
	hist := ce.history(conv)
	if len(hist) < 3 || hist[0] != "user:remember me" || hist[1] != "assistant:fake reply: remember me" {
		t.Errorf("the resumed CLI sent %q", hist)
	}
	if got := clMarkdown(chatOf(t, a, def).Turns[2]); got != "fake reply: after the stop" {
		t.Errorf("t3 answered %q", got)
	}
}

// TestClaudeInRootAgents: the root state lists claude with its models when
// the CLI is installed, and says why it is unavailable when it is not.
func TestClaudeInRootAgents(t *testing.T) {
	t.Parallel()
	ce := newClaudeEnv(t, claude.StopEndsTurn)
	a := ce.client("a")
	raw, _ := a.Subscribe(ahp.RootURI)
	var root struct {
		Agents []ahp.AgentInfo `json:"agents"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	if len(root.Agents) != 1 || root.Agents[0].Provider != claude.Provider || len(root.Agents[0].Models) == 0 ||
		strings.Contains(root.Agents[0].Description, "unavailable") {
		t.Errorf("root agents %s", raw)
	}

	missing := claude.New(claude.Options{Binary: filepath.Join(t.TempDir(), "no-claude-here")})
	if info := missing.Info(t.Context()); !strings.Contains(info.Unavailable, "make agents") {
		t.Errorf("a missing CLI says %q", info.Unavailable)
	}
}
