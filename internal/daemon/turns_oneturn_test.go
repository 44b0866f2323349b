package daemon_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// draftBarrier sends a draft from c and waits for its echo: every action c
// sent before it has been handled by then.
func draftBarrier(t testing.TB, c *ahptest.Client, chat, text string) ahptest.Envelope {
	t.Helper()
	return awaitAccepted(t, c, c.Dispatch(chat, map[string]any{"type": "chat/draftChanged", "draft": userMessage(text)}))
}

// historyHas reports whether any conversation of the provider's script
// holds a turn whose text contains s (what the backend admitted, as
// opposed to what it was sent).
func (e *turnsEnv) historyHas(provider, s string) bool {
	sc := e.scripts[provider]
	seen := map[string]bool{}
	for _, o := range sc.Opens() {
		if seen[o.Conversation] {
			continue
		}
		seen[o.Conversation] = true
		for _, text := range sc.History(o.Conversation) {
			if strings.Contains(text, s) {
				return true
			}
		}
	}
	return false
}

func (e *turnsEnv) wasSent(provider, s string) bool {
	return slices.ContainsFunc(e.sentTexts(provider), func(text string) bool { return strings.Contains(text, s) })
}

// TestTurnsOneAtATime is the paragraph "cofold, pi, an ACP server and a
// bot's chat each run one turn at a time": C-TURN-103 to C-TURN-108, the
// script standing in for those backends, on a backend that holds a turn
// sent while another runs itself (OneTurnAtATime) and on one the host holds
// it for.
//
// A client's chat/turnStarted that arrives while a turn runs waits behind
// it, unsaid: the reducer replaces the active turn on a start of another
// id, so the host says it (its echo included) once the turn in front of it
// ends, and then runs it; a stop of the turn in front says each turn
// waiting behind it and ends it cancelled, unrun.
func TestTurnsOneAtATime(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()

			// C-TURN-103, C-TURN-104.
			t.Run("a turn sent while another runs runs after it", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				startTurn(a.Client, chatURI, "t1", "[confirm] first "+tag)
				awaitWaiting(t, b.Client, chatURI, "t1")
				seq := startTurn(b.Client, chatURI, "t2", "second "+tag)
				draftBarrier(t, b.Client, chatURI, "typing")
				for _, env := range chatEnvelopes(b.Client, chatURI) {
					if env.Type() == "chat/turnStarted" && turnID(env) == "t2" {
						t.Fatal("t2 was said while t1 runs")
					}
				}
				if st := sameState(t, a, b); st.ActiveTurn == nil || st.ActiveTurn.ID != "t1" {
					t.Fatalf("active turn %+v, want t1", st.ActiveTurn)
				}
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				done := awaitTyped(t, a.Client, chatURI, "chat/turnComplete", "t1")
				echo := awaitAccepted(t, b.Client, seq)
				if echo.Type() != "chat/turnStarted" || turnID(echo) != "t2" || echo.ServerSeq < done.ServerSeq {
					t.Fatalf("t2 said as %s, t1 completed at %d", echo.Raw, done.ServerSeq)
				}
				caughtUp(t, chatURI, echo.ServerSeq, a, b)
				if !rightBehind(a.Client, chatURI, done, echo) {
					t.Fatalf("t2 does not start as t1 ends: %v", sequence(chatEnvelopes(a.Client, chatURI)))
				}
				if end := awaitEnd(t, a.Client, chatURI, "t2"); end.Type() != "chat/turnComplete" {
					t.Fatalf("t2 ended %s", end.Raw)
				}
				settle(t, a, b)
				sameState(t, a, b)
				sent := e.sentTexts(prov)
				i, j := slices.Index(sent, "[confirm] first "+tag), slices.Index(sent, "second "+tag)
				if i < 0 || j < i {
					t.Fatalf("sent to the backend in the wrong order: %d, %d", i, j)
				}
			})

			// C-TURN-105, C-TURN-106.
			t.Run("a stop runs none of the turns sent behind", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				startTurn(a.Client, chatURI, "t1", "[hold] first")
				awaitStreaming(t, b.Client, chatURI, "t1")
				startTurn(b.Client, chatURI, "t2", "second "+tag)
				draftBarrier(t, b.Client, chatURI, "x")
				startTurn(a.Client, chatURI, "t3", "third "+tag)
				draftBarrier(t, a.Client, chatURI, "y")
				stop := awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
				last := awaitTyped(t, b.Client, chatURI, "chat/turnCancelled", "t3")
				caughtUp(t, chatURI, last.ServerSeq, a, b)
				for _, w := range []*watcher{a, b} {
					envs := chatEnvelopes(w.Client, chatURI)
					i := indexOf(envs, func(e ahptest.Envelope) bool { return e.ServerSeq == stop.ServerSeq })
					got := sequence(envs[i:])
					want := []string{"turnCancelled(t1)", "turnStarted(t2)", "turnCancelled(t2)", "turnStarted(t3)", "turnCancelled(t3)"}
					if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
						t.Fatalf("client %s after the stop: %v, want %v", w.ID, got, want)
					}
				}
				// Their starts are the clients' echoes.
				for _, w := range []*watcher{a, b} {
					for _, env := range chatEnvelopes(w.Client, chatURI) {
						if env.Type() == "chat/turnStarted" && (turnID(env) == "t2" || turnID(env) == "t3") && env.Origin == nil {
							t.Fatalf("%s said without its client's origin", turnID(env))
						}
					}
				}
				sendTurn(t, a.Client, chatURI, "t4", "after")
				settle(t, a, b)
				st := sameState(t, a, b)
				for _, id := range []string{"t2", "t3"} {
					if tr := turnOf(t, st, id); tr.State != ahp.TurnCancelled {
						t.Fatalf("%s ended %s, want cancelled", id, tr.State)
					}
				}
				if e.wasSent(prov, "second "+tag) || e.wasSent(prov, "third "+tag) {
					t.Fatal("a turn sent behind the stopped one reached the backend")
				}
			})

			// A client's stop of its own turn waiting behind the running one:
			// that turn is said and ended, unrun, when the one in front ends.
			t.Run("a waiting turn stopped by its client", func(t *testing.T) {
				t.Parallel()
				chatURI, a, b := e.twoWatchers(t, prov)
				tag := uuid.NewString()[:8]
				startTurn(a.Client, chatURI, "t1", "[confirm] first")
				awaitWaiting(t, b.Client, chatURI, "t1")
				start := startTurn(b.Client, chatURI, "t2", "second "+tag)
				stop := stopTurn(b.Client, chatURI, "t2")
				startTurn(b.Client, chatURI, "t3", "third "+tag)
				draftBarrier(t, b.Client, chatURI, "x")
				awaitAccepted(t, a.Client, confirmTool(a.Client, chatURI, "t1"))
				awaitAccepted(t, b.Client, start)
				if end := awaitAccepted(t, b.Client, stop); end.Type() != "chat/turnCancelled" {
					t.Fatalf("t2 ended %s", end.Raw)
				}
				awaitEnd(t, b.Client, chatURI, "t3")
				settle(t, a, b)
				st := sameState(t, a, b)
				if turnOf(t, st, "t2").State != ahp.TurnCancelled || turnOf(t, st, "t3").State != ahp.TurnComplete {
					t.Fatalf("t2 %s, t3 %s", turnOf(t, st, "t2").State, turnOf(t, st, "t3").State)
				}
				if e.wasSent(prov, "second "+tag) {
					t.Fatal("the stopped waiting turn reached the backend")
				}
				for id, n := range ends(chatEnvelopes(a.Client, chatURI)) {
					if n != 1 {
						t.Fatalf("turn %s ended %d times", id, n)
					}
				}
			})
		})
	}

	// C-TURN-104, C-TURN-105, C-TURN-107, C-TURN-108: a turn sent while the
	// backend still ends a stopped one ([stubborn] takes slowDelay×3 to end
	// after a stop). The backend that runs one turn at a time holds it and
	// cancels it unrun when it is stopped; for the other the host holds it,
	// and a stop ends it unsent.
	for _, prov := range []string{provSlow, provSlowConcurrent} {
		holdsItself := prov == provSlow
		t.Run(prov+"/sent while the backend ends a stopped turn", func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			tag := uuid.NewString()[:8]
			startTurn(a.Client, chatURI, "t1", "[hold][stubborn] first")
			awaitStreaming(t, b.Client, chatURI, "t1")
			awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
			startTurn(a.Client, chatURI, "t2", "second "+tag)
			awaitTyped(t, b.Client, chatURI, "chat/turnStarted", "t2")
			awaitAccepted(t, b.Client, stopTurn(b.Client, chatURI, "t2"))
			// t3 runs once the backend has ended t1 (and t2).
			if end := sendTurn(t, a.Client, chatURI, "t3", "third "+tag); end.Type() != "chat/turnComplete" {
				t.Fatalf("t3 ended %s", end.Raw)
			}
			settle(t, a, b)
			sameState(t, a, b)
			if e.historyHas(prov, "second "+tag) {
				t.Fatal("the stopped t2 ran")
			}
			if sent := e.wasSent(prov, "second "+tag); sent != holdsItself {
				t.Fatalf("t2 sent to the backend = %v, want %v", sent, holdsItself)
			}
		})

		t.Run(prov+"/stopped while preparing", func(t *testing.T) {
			t.Parallel()
			chatURI, a, b := e.twoWatchers(t, prov)
			tag := uuid.NewString()[:8]
			startTurn(a.Client, chatURI, "t1", "[prep] prepared "+tag)
			awaitTyped(t, b.Client, chatURI, "chat/turnStarted", "t1")
			awaitAccepted(t, a.Client, stopTurn(a.Client, chatURI, "t1"))
			if end := sendTurn(t, a.Client, chatURI, "t2", "next "+tag); end.Type() != "chat/turnComplete" {
				t.Fatalf("t2 ended %s", end.Raw)
			}
			settle(t, a, b)
			sameState(t, a, b)
			if !e.wasSent(prov, "prepared "+tag) || e.historyHas(prov, "prepared "+tag) {
				t.Fatal("the turn stopped while preparing was not ended unsent")
			}
		})
	}
}

// TestTurnsHostContext is the sentence "What the host has to say on a turn
// goes into that turn's prompt": C-TURN-109, with a side chat's first
// prompt (the host tells it what the source turn said) as what the host
// has to say.
func TestTurnsHostContext(t *testing.T) {
	e := newTurnsEnv(t)
	for _, prov := range []string{provScript, provConcurrent} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			creator := e.dial(t, "creator")
			sess, source := e.newSession(t, creator, prov)
			creator.Subscribe(source)
			tag := uuid.NewString()[:8]
			sendTurn(t, creator, source, "t1", "the question "+tag)
			side := "ahp-chat:/" + uuid.NewString()
			creator.MustCall("createChat", map[string]any{"channel": sess, "chat": side,
				"source": map[string]any{"kind": "sideChat", "chat": source, "turnId": "t1"}})
			ws := e.watchers(t, side, "a", "b")
			a, b := ws[0], ws[1]
			sendTurn(t, a.Client, side, "s1", "about it "+tag)
			sendTurn(t, a.Client, side, "s2", "and more "+tag)
			settle(t, a, b)
			st := sameState(t, a, b)
			var first, second *struct{ ctx string }
			for _, tr := range e.scripts[prov].Sent() {
				switch tr.Text {
				case "about it " + tag:
					first = &struct{ ctx string }{tr.HostContext}
				case "and more " + tag:
					second = &struct{ ctx string }{tr.HostContext}
				}
			}
			if first == nil || !strings.Contains(first.ctx, "the question "+tag) {
				t.Fatalf("the first prompt's host context = %+v, want the source turn", first)
			}
			if second == nil || second.ctx != "" {
				t.Fatalf("the second prompt carries host context %+v", second)
			}
			s1 := turnOf(t, st, "s1")
			if s1.Message.Text != "about it "+tag || !strings.HasPrefix(answerOf(s1), "(context: ") {
				t.Fatalf("s1 says %q and answers %q", s1.Message.Text, answerOf(s1))
			}
			raw, _ := json.Marshal(st)
			if strings.Contains(string(raw), "the question "+tag) {
				t.Fatal("the host's words reached the side chat's visible history")
			}
		})
	}
}
