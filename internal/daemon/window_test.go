package daemon_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// windowTurn is what a client reads of a turn, without what differs
// between two runs of the same script (durations, times).
type windowTurn struct {
	ID, State, Text, Sender, Answer string
}

func windowTurns(ts []ahp.Turn) []windowTurn {
	out := []windowTurn{}
	for _, t := range ts {
		sender, _ := t.Message.Meta["ahpd.sender"].(string)
		var answer strings.Builder
		for _, p := range t.ResponseParts {
			answer.WriteString(p.Kind + ":" + p.Content + ";")
		}
		out = append(out, windowTurn{ID: t.ID, State: string(t.State), Text: t.Message.Text, Sender: sender, Answer: answer.String()})
	}
	return out
}

// decodeCursor is what a fetchTurns cursor names.
func decodeCursor(c *string) string {
	if c == nil {
		return "<none>"
	}
	b, _ := base64.RawURLEncoding.DecodeString(*c)
	return string(b)
}

// windowScript runs the same client script on a daemon whose chats keep
// kept ended turns in memory, and returns everything the clients were
// answered, one line each.
func windowScript(t *testing.T, kept int) []string {
	e := newEnv(t, func(c *daemon.Config) {
		c.TurnsKept = kept
		c.TurnsView = 3
	})
	var seen []string
	note := func(what string, v any) {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, what+": "+string(raw))
	}
	full := func(c *ahptest.Client, chat string) ahp.ChatState {
		t.Helper()
		raw, _ := c.Subscribe(chat)
		return chatState(t, raw)
	}
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/714d0000-0000-4000-8000-000000000001")
	a.Subscribe(def)
	for i := range 8 {
		sendTurn(t, a, def, fmt.Sprintf("t%d", i), fmt.Sprintf("m%d", i))
	}
	// A restart opens the chat from the store: its window, and the rest
	// read when asked for.
	e.restart()
	a = e.client("a")
	a.Subscribe(def)
	sendTurn(t, a, def, "t8", "m8")
	note("no view", windowTurns(full(a, def).Turns))

	b := e.client("b")
	var sub struct {
		Snapshot struct {
			State ahp.ChatState `json:"state"`
		} `json:"snapshot"`
	}
	for _, n := range []int{0, 1, 2, 4, 9, 20} {
		sub.Snapshot.State = ahp.ChatState{}
		raw := b.MustCall("subscribe", map[string]any{"channel": def, "view": map[string]any{"turns": n}})
		if err := json.Unmarshal(raw, &sub); err != nil {
			t.Fatal(err)
		}
		note(fmt.Sprintf("view %d", n), windowTurns(sub.Snapshot.State.Turns))
		note(fmt.Sprintf("view %d cursor", n), decodeCursor(sub.Snapshot.State.TurnsNextCursor))
		b.Notify("unsubscribe", map[string]any{"channel": def})
	}
	// Pages from a view of 4: by cursor, then without one (where the
	// oldest page a watcher holds ends).
	raw := b.MustCall("subscribe", map[string]any{"channel": def, "view": map[string]any{"turns": 4}})
	if err := json.Unmarshal(raw, &sub); err != nil {
		t.Fatal(err)
	}
	fetch := func(params map[string]any) {
		t.Helper()
		before := len(b.Envelopes())
		if _, err := b.Call("fetchTurns", params); err != nil {
			note("fetchTurns error", err.Message)
			return
		}
		for _, env := range b.Envelopes()[before:] {
			if env.Type() == "chat/turnsLoaded" {
				var page ahp.ChatTurnsLoaded
				if err := json.Unmarshal(env.Action, &page); err != nil {
					t.Fatal(err)
				}
				note("page", windowTurns(page.Turns))
				note("page cursor", decodeCursor(page.TurnsNextCursor))
			}
		}
	}
	fetch(map[string]any{"channel": def, "cursor": *sub.Snapshot.State.TurnsNextCursor})
	fetch(map[string]any{"channel": def})
	fetch(map[string]any{"channel": def})
	// A cursor naming an old turn, the end, and one naming no turn.
	fetch(map[string]any{"channel": def, "cursor": base64.RawURLEncoding.EncodeToString([]byte("before:t2"))})
	fetch(map[string]any{"channel": def, "cursor": base64.RawURLEncoding.EncodeToString([]byte("end"))})
	fetch(map[string]any{"channel": def, "cursor": base64.RawURLEncoding.EncodeToString([]byte("before:nope"))})

	// A repeated start of an old turn is said again and changes nothing.
	startAgain := func(id, text string) {
		t.Helper()
		a.Dispatch(def, turnStarted(id, text))
		a.AwaitEnvelope("the repeated start of "+id, func(env ahptest.Envelope) bool {
			var got string
			_ = env.Field("turnId", &got)
			return env.Type() == "chat/turnStarted" && got == id
		})
	}
	startAgain("t1", "m1 again")
	sendTurn(t, a, def, "t9", "m9")
	note("after a repeated start", windowTurns(full(a, def).Turns))
	// And of one that left the window after the chat first looked for an
	// older turn (its filter of older ids, read then, learns it as it
	// leaves: chat/olderids.go).
	sendTurn(t, a, def, "t10", "m10")
	startAgain("t8", "m8 again")
	sendTurn(t, a, def, "t11", "m11")
	note("after a second repeated start", windowTurns(full(a, def).Turns))

	// A fork and a side chat at old turns.
	fork := "ahp-chat:/714df000-0000-4000-8000-000000000001"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": fork, "source": map[string]any{"kind": "fork", "chat": def, "turnId": "t2"}})
	note("fork", windowTurns(full(a, fork).Turns))
	sendTurn(t, a, fork, "f1", "the fork goes on")
	note("fork goes on", windowTurns(full(a, fork).Turns))
	if _, err := a.Call("createChat", map[string]any{"channel": sess, "chat": "ahp-chat:/714df000-0000-4000-8000-000000000009",
		"source": map[string]any{"kind": "fork", "chat": def, "turnId": "nope"}}); err != nil {
		note("fork at no turn", err.Code)
	}
	side := "ahp-chat:/714d51de-0000-4000-8000-000000000001"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": side, "source": map[string]any{"kind": "sideChat", "chat": def, "turnId": "t1"}})
	a.Subscribe(side)
	sendTurn(t, a, side, "s1", "what was that?")
	note("side chat", windowTurns(full(a, side).Turns))

	// A rewind to an old turn, and the turns after it.
	a.Dispatch(def, map[string]any{"type": "chat/truncated", "turnId": "t3"})
	a.AwaitEnvelope("the rewind", func(env ahptest.Envelope) bool { return env.Type() == "chat/truncated" })
	note("rewound", windowTurns(full(a, def).Turns))
	for i := 10; i < 14; i++ {
		sendTurn(t, a, def, fmt.Sprintf("t%d", i), fmt.Sprintf("m%d", i))
	}
	note("after the rewind", windowTurns(full(a, def).Turns))
	e.restart()
	a = e.client("a")
	note("after a restart", windowTurns(full(a, def).Turns))
	return seen
}

// TestChatWindowAnswersAsWhole: a chat that keeps two turns in memory
// answers every client exactly as one that keeps them all: a subscribe
// with and without a view, fetchTurns by cursor and without one, a
// repeated start of an old turn, a fork and a side chat at one, a rewind to
// one, and a restart (issue #34; the window is internal/chat/window.go).
func TestChatWindowAnswersAsWhole(t *testing.T) {
	t.Parallel()
	all := windowScript(t, 1000)
	two := windowScript(t, 2)
	if !reflect.DeepEqual(all, two) {
		for i := range max(len(all), len(two)) {
			var x, y string
			if i < len(all) {
				x = all[i]
			}
			if i < len(two) {
				y = two[i]
			}
			if x != y {
				t.Errorf("answer %d differs:\n all in memory: %s\n two in memory: %s", i, x, y)
			}
		}
	}
	if len(all) < 20 {
		t.Fatalf("the script answered only %d things", len(all))
	}
}
