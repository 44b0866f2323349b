package daemon_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// confirmTool approves the script's one tool call of turn id.
func confirmTool(c *ahptest.Client, chat, id string) int64 {
	return c.Dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": id, "toolCallId": id + "-tool-1", "approved": true})
}

// awaitWaiting waits until turn id's tool call waits for confirmation.
func awaitWaiting(t testing.TB, c *ahptest.Client, chat, id string) {
	t.Helper()
	awaitTyped(t, c, chat, "chat/toolCallReady", id)
}

// awaitStreaming waits until turn id said its first part.
func awaitStreaming(t testing.TB, c *ahptest.Client, chat, id string) {
	t.Helper()
	awaitTyped(t, c, chat, "chat/responsePart", id)
}

// TestTurnsStartAndActiveTurn is the paragraph "chat/turnStarted arrives
// from a client and this host emits it again": C-TURN-01, C-TURN-02,
// C-TURN-03.
func TestTurnsStartAndActiveTurn(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			seq := startTurn(a.Client, chatURI, "t1", "[confirm] hello")
			// C-TURN-01: said again to every watcher, the sender included.
			echo := awaitAccepted(t, a.Client, seq)
			if echo.Type() != "chat/turnStarted" || turnID(echo) != "t1" {
				t.Fatalf("echo = %s", echo.Raw)
			}
			seen := awaitTyped(t, b.Client, chatURI, "chat/turnStarted", "t1")
			if seen.ServerSeq != echo.ServerSeq || seen.Origin == nil || seen.Origin.ClientID != a.ID {
				t.Fatalf("b saw %s, a saw %s", seen.Raw, echo.Raw)
			}
			awaitWaiting(t, b.Client, chatURI, "t1")
			// C-TURN-02: the running turn is activeTurn and not in turns.
			st := sameState(t, a, b)
			if st.ActiveTurn == nil || st.ActiveTurn.ID != "t1" {
				t.Fatalf("activeTurn = %+v, want t1", st.ActiveTurn)
			}
			if slices.ContainsFunc(st.Turns, func(tr ahp.Turn) bool { return tr.ID == "t1" }) {
				t.Fatal("the running turn is in turns")
			}
			awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
			awaitTyped(t, b.Client, chatURI, "chat/turnComplete", "t1")
			// C-TURN-03: it moves into turns when it completes.
			st = sameState(t, a, b)
			if st.ActiveTurn != nil || len(st.Turns) != 1 || st.Turns[0].ID != "t1" || st.Turns[0].State != ahp.TurnComplete {
				t.Fatalf("after completion: active %+v, turns %+v", st.ActiveTurn, st.Turns)
			}
		})
	}
}

// TestTurnsSender is the paragraph "A turn says who sent it": C-TURN-04,
// C-TURN-05, C-TURN-06, C-TURN-07, C-TURN-08, C-TURN-09.
func TestTurnsSender(t *testing.T) {
	t.Parallel()
	e := newTurnsEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "alice-token", Principal: "user:alice", Grants: []string{"*"}}}
	})
	root := e.client("root")
	_, chatURI := e.newSession(t, root, provScript)
	root.Subscribe(chatURI)
	alice := ahptest.Dial(t, e.d.URL(), "alice-token")
	alice.Initialize("alice")
	st, seq := alice.Subscribe(chatURI)
	a := &watcher{Client: alice, chat: chatURI, first: st, fromSeq: seq}
	b := e.watchers(t, chatURI, "b")[0]

	senderOf := func(env ahptest.Envelope) string {
		var m struct {
			Meta map[string]any `json:"_meta"`
		}
		if err := env.Field("message", &m); err != nil {
			t.Fatalf("turnStarted without message: %s", env.Raw)
		}
		s, _ := m.Meta[chat.SenderMetaKey].(string)
		return s
	}
	// C-TURN-05, C-TURN-07: somebody signed in: user:<id>, in the message's _meta.
	sendTurn(t, alice, chatURI, "t1", "from alice")
	if got := senderOf(awaitTyped(t, b.Client, chatURI, "chat/turnStarted", "t1")); got != "user:alice" {
		t.Fatalf("t1 sender = %q, want user:alice", got)
	}
	// C-TURN-06: the deployment's own token: root:<host>.
	sendTurn(t, root, chatURI, "t2", "from the deployment")
	if got := senderOf(awaitTyped(t, b.Client, chatURI, "chat/turnStarted", "t2")); !strings.HasPrefix(got, "root:") || len(got) == len("root:") {
		t.Fatalf("t2 sender = %q, want root:<host>", got)
	}
	// C-TURN-04: the host says who sent it, whatever the message claims.
	forged := turnStarted("t3", "claims to be root")
	forged["message"].(map[string]any)["_meta"] = map[string]any{chat.SenderMetaKey: "root:elsewhere", "other": "kept"}
	alice.Dispatch(chatURI, forged)
	env := awaitTyped(t, b.Client, chatURI, "chat/turnStarted", "t3")
	if got := senderOf(env); got != "user:alice" {
		t.Fatalf("forged sender came through: %q", got)
	}
	awaitEnd(t, b.Client, chatURI, "t3")
	// A queued message becomes a turn naming whoever queued it.
	startTurn(root, chatURI, "t4", "[confirm] root's")
	awaitWaiting(t, b.Client, chatURI, "t4")
	awaitAccepted(t, alice, setPending(alice, chatURI, ahp.PendingQueued, "q1", "alice queued this"))
	awaitAccepted(t, root, confirmTool(root, chatURI, "t4"))
	qs := awaitStartOf(t, b.Client, chatURI, "q1")
	if got := senderOf(qs); got != "user:alice" {
		t.Fatalf("queued turn sender = %q, want user:alice", got)
	}
	awaitEnd(t, b.Client, chatURI, turnID(qs))
	before := sameState(t, a, b)
	want := map[string]string{}
	for _, tr := range before.Turns {
		want[tr.ID], _ = tr.Message.Meta[chat.SenderMetaKey].(string)
		if want[tr.ID] == "" {
			t.Fatalf("turn %s names no sender", tr.ID)
		}
	}
	if before.Turns[2].Message.Meta["other"] != "kept" {
		t.Fatalf("the message's other _meta was not kept: %+v", before.Turns[2].Message.Meta)
	}

	// C-TURN-08: read back after a restart, each turn names the same sender.
	e.restart()
	c := e.client("after-restart")
	raw, _ := c.Subscribe(chatURI)
	for _, tr := range chatState(t, raw).Turns {
		if got, _ := tr.Message.Meta[chat.SenderMetaKey].(string); got != want[tr.ID] {
			t.Fatalf("after restart turn %s names %q, want %q", tr.ID, got, want[tr.ID])
		}
	}

	// C-TURN-09: a turn stored before senders were kept reads back naming
	// nobody; the host does not guess.
	e.stop()
	ctx := context.Background()
	s, err := store.Open(filepath.Join(e.cfg.DataDir, "ahpd.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := s.Turn(ctx, chatURI, "t1")
	if err != nil || !ok {
		t.Fatalf("stored t1: %v %v", ok, err)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		t.Fatal(err)
	}
	delete(body["message"].(map[string]any), "_meta")
	rec.Body, _ = json.Marshal(body)
	rec.Sender = ""
	if err := s.PutTurn(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.start()
	c = e.client("old-turns")
	raw, _ = c.Subscribe(chatURI)
	for _, tr := range chatState(t, raw).Turns {
		got, has := tr.Message.Meta[chat.SenderMetaKey]
		switch {
		case tr.ID == "t1" && has:
			t.Fatalf("a turn kept without a sender reads back naming %v", got)
		case tr.ID != "t1" && got != want[tr.ID]:
			t.Fatalf("turn %s names %v, want %q", tr.ID, got, want[tr.ID])
		}
	}
}

// TestTurnsOneEnding is the paragraph "One action ends a turn": C-TURN-10,
// C-TURN-11, C-TURN-12, C-TURN-13, C-TURN-14.
func TestTurnsOneEnding(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			want := map[string]string{}
			sendTurn(t, a.Client, chatURI, "ok", "works")
			want["ok"] = "chat/turnComplete" // C-TURN-11
			sendTurn(t, a.Client, chatURI, "bad", "[error] fails")
			want["bad"] = "chat/error" // C-TURN-12
			startTurn(a.Client, chatURI, "stopped", "[hold] waits")
			awaitStreaming(t, a.Client, chatURI, "stopped")
			awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "stopped"))
			want["stopped"] = "chat/turnCancelled" // C-TURN-13
			sendTurn(t, a.Client, chatURI, "died", "[exit] the process dies")
			want["died"] = "chat/error"
			sendTurn(t, a.Client, chatURI, "cmd", "!exit 3")
			want["cmd"] = "chat/turnComplete" // a failing ! command fails its tool call; the turn completes
			sendTurn(t, a.Client, chatURI, "last", "still answers")
			want["last"] = "chat/turnComplete"
			sameState(t, a, b)
			for _, w := range []*watcher{a, b} {
				envs := chatEnvelopes(w.Client, chatURI)
				// C-TURN-10: exactly one ending action per turn.
				for id, n := range ends(envs) {
					if n != 1 {
						t.Fatalf("client %s: turn %s got %d endings: %v", w.ID, id, n, sequence(envs))
					}
				}
				for _, env := range envs {
					if !isEnding(env.Type()) {
						continue
					}
					id := turnID(env)
					if env.Type() != want[id] {
						t.Fatalf("turn %s ended with %s, want %s", id, env.Type(), want[id])
					}
					// C-TURN-14: every ending carries a duration.
					var d *int64
					if err := env.Field("duration", &d); err != nil || d == nil || *d < 0 {
						t.Fatalf("ending without a duration: %s", env.Raw)
					}
					if env.Type() == "chat/error" {
						// C-TURN-12: the error part travels in the ending itself.
						var part ahp.ResponsePart
						if err := env.Field("part", &part); err != nil || part.Kind != ahp.PartError || part.Error == nil || part.Error.Message == "" {
							t.Fatalf("chat/error without its error part: %s", env.Raw)
						}
					}
				}
				if len(ends(envs)) != len(want) {
					t.Fatalf("client %s saw endings for %v, want %d turns", w.ID, ends(envs), len(want))
				}
			}
			st := sameState(t, a, b)
			for _, tr := range st.Turns {
				if tr.Duration == nil {
					t.Fatalf("turn %s kept without a duration", tr.ID)
				}
				if tr.State == ahp.TurnError {
					last := tr.ResponseParts[len(tr.ResponseParts)-1]
					if last.Kind != ahp.PartError {
						t.Fatalf("failed turn %s does not end in its error part", tr.ID)
					}
				}
			}
		})
	}
}

// TestTurnsEndedTurnTakesNoResults is the paragraph "A turn that has ended
// takes no more results": C-TURN-15, C-TURN-16. The [stubborn] turn answers
// its tool call and says more after the stop, as Claude's CLI does.
func TestTurnsEndedTurnTakesNoResults(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			startTurn(a.Client, chatURI, "t1", "[confirm][stubborn] wait for me")
			awaitWaiting(t, b.Client, chatURI, "t1")
			stop := awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
			// The backend answers after the stop; the next turn runs once it
			// has ended the stopped one, so by its end every late event of
			// t1 has reached the host.
			sendTurn(t, a.Client, chatURI, "t2", "next")
			awaitEnd(t, b.Client, chatURI, "t2")
			for _, w := range []*watcher{a, b} {
				for _, env := range chatEnvelopes(w.Client, chatURI) {
					if env.ServerSeq > stop.ServerSeq && turnID(env) == "t1" {
						// C-TURN-15: nothing for t1 after its ending.
						t.Fatalf("client %s got %s for t1 after its stop", w.ID, env.Raw)
					}
				}
			}
			st := sameState(t, a, b)
			t1 := turnOf(t, st, "t1")
			if t1.State != ahp.TurnCancelled {
				t.Fatalf("t1 state = %s", t1.State)
			}
			// C-TURN-16: the call the stop cancelled stays cancelled.
			var call *ahp.ToolCallState
			for _, p := range t1.ResponseParts {
				if p.Kind == ahp.PartToolCall {
					call = p.ToolCall
				}
			}
			if call == nil || call.Status != ahp.ToolCancelled {
				t.Fatalf("t1's tool call = %+v, want cancelled", call)
			}
			if strings.Contains(answerOf(t1), "after the stop") {
				t.Fatalf("t1 took text after its stop: %q", answerOf(t1))
			}
		})
	}
}

// TestTurnsPendingMessages is the paragraph "A message that arrives while a
// turn is running waits as a pending message": C-TURN-20, C-TURN-21,
// C-TURN-22, C-TURN-23, C-TURN-24, C-TURN-25 (and C-TURN-49 for a backend
// that takes no steering); a queued message waits behind the running turn
// and a steering one goes into it (C-CHAT-13, C-CHAT-14).
func TestTurnsPendingMessages(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provNoWithdraw, provConcurrent, provNoSteer} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			steering := prov != provNoSteer
			chatURI, a, b := e.twoWatchers(t, prov)
			tag := uuid.NewString()[:8]
			startTurn(a.Client, chatURI, "t1", "[confirm] first "+tag)
			awaitWaiting(t, b.Client, chatURI, "t1")

			// C-TURN-20, C-TURN-21, C-TURN-23: a queued message waits, said
			// as it came and held in the chat's state.
			queued := map[string]any{"type": "chat/pendingMessageSet", "kind": ahp.PendingQueued, "id": "q1",
				"message": map[string]any{"text": "queued " + tag, "origin": map[string]any{"kind": "user"}, "_meta": map[string]any{"x": "y"}}}
			echo := awaitAccepted(t, b.Client, b.Dispatch(chatURI, queued))
			var got, sent map[string]any
			_ = json.Unmarshal(echo.Action, &got)
			raw, _ := json.Marshal(queued)
			_ = json.Unmarshal(raw, &sent)
			if g, w := turnsJSON(t, got), turnsJSON(t, sent); g != w {
				t.Fatalf("queued message said as %s, sent as %s", g, w)
			}
			steer := map[string]any{"type": "chat/pendingMessageSet", "kind": ahp.PendingSteering, "id": "s1", "message": userMessage("steer " + tag)}
			seq := b.Dispatch(chatURI, steer)
			if !steering {
				awaitRefused(t, b.Client, seq, chat.ReasonNoSteering) // C-TURN-49
			} else {
				// C-TURN-23 (and C-TURN-81, C-TURN-88): said as it came.
				echo := awaitAccepted(t, b.Client, seq)
				var got map[string]any
				_ = json.Unmarshal(echo.Action, &got)
				if g, w := turnsJSON(t, got), turnsJSON(t, steer); g != w {
					t.Fatalf("steering message said as %s, sent as %s", g, w)
				}
			}
			st := sameState(t, a, b)
			if len(st.QueuedMessages) != 1 || st.QueuedMessages[0].ID != "q1" {
				t.Fatalf("queued messages = %+v", st.QueuedMessages)
			}
			// C-TURN-24: the backend has not been handed the queued message.
			for _, text := range e.sentTexts(prov) {
				if strings.Contains(text, "queued "+tag) {
					t.Fatal("a queued message was handed to the backend while it waits")
				}
			}
			for _, s := range e.scripts[prov].Steers() {
				if s.Steering.ID == "q1" {
					t.Fatal("a queued message was handed as steering")
				}
			}
			awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
			awaitTyped(t, b.Client, chatURI, "chat/turnComplete", "t1")
			q := awaitStartOf(t, b.Client, chatURI, "q1")
			awaitEnd(t, b.Client, chatURI, turnID(q))
			st = sameState(t, a, b)
			t1 := turnOf(t, st, "t1")
			// C-TURN-22: the steering message went into the running turn.
			if steered := strings.Contains(answerOf(t1), "[steered: steer "+tag+"]"); steered != steering {
				t.Fatalf("t1 steered = %v, want %v: %q", steered, steering, answerOf(t1))
			}
			if st.SteeringMessage != nil || len(st.QueuedMessages) != 0 {
				t.Fatalf("pending messages left: %+v %+v", st.SteeringMessage, st.QueuedMessages)
			}
			// C-TURN-25: one conversation, open from turn to turn.
			convs := conversationsOf(e, prov, "t1")
			if len(convs) != 1 {
				t.Fatalf("t1 went to %d conversations", len(convs))
			}
			opens := 0
			for _, o := range e.scripts[prov].Opens() {
				if o.Conversation == convs[0] {
					opens++
				}
			}
			if n := len(e.scripts[prov].Prompts(convs[0])); opens != 1 || n != 2 {
				t.Fatalf("conversation opened %d times for %d prompts, want once for 2", opens, n)
			}
		})
	}
}

// conversationsOf names the script conversations that were sent turn id.
func conversationsOf(e *turnsEnv, provider, id string) []string {
	var out []string
	for _, o := range e.scripts[provider].Opens() {
		if slices.Contains(out, o.Conversation) {
			continue
		}
		for _, p := range e.scripts[provider].Prompts(o.Conversation) {
			if p.ID == id {
				out = append(out, o.Conversation)
				break
			}
		}
	}
	return out
}

func turnsJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
