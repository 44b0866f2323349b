package daemon_test

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

type reconnectResult struct {
	Type      string            `json:"type"`
	Actions   []json.RawMessage `json:"actions"`
	Missing   []string          `json:"missing"`
	Snapshots []ahp.Snapshot    `json:"snapshots"`
}

func lastSeq(c *ahptest.Client) int64 {
	env := c.Envelopes()
	if len(env) == 0 {
		return 0
	}
	return env[len(env)-1].ServerSeq
}

// TestReconnectReplaysMissedEnvelopes: a client whose socket dropped gets
// exactly the envelopes it missed on its channels, and then the live
// stream (C-TURN-124).
func TestReconnectReplaysMissedEnvelopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	b := e.client("b")
	sess, chat := e.createSession(a, "ahp-session:/6f0d1f7a-0000-4000-8000-000000000010")
	subs := []string{ahp.RootURI, sess, chat}
	for _, c := range []*ahptest.Client{a, b} {
		c.Subscribe(sess)
		c.Subscribe(chat)
	}
	sendTurn(t, a, chat, "t1", "first")
	awaitEnd(t, b, chat, "t1")
	seen := lastSeq(a)
	a.Close()

	end := sendTurn(t, b, chat, "t2", "second while a is away")
	awaitIdle(t, b, sess, chat, end.ServerSeq)

	var missed []string
	for _, env := range b.Envelopes() {
		if env.ServerSeq > seen && (env.Channel == chat || env.Channel == sess) {
			missed = append(missed, string(env.Raw))
		}
	}
	if len(missed) == 0 {
		t.Fatal("b saw nothing after a left")
	}

	a2 := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	a2.ID = "a"
	raw := a2.MustCall("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "a", "lastSeenServerSeq": seen, "subscriptions": subs})
	var res reconnectResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "replay" {
		t.Fatalf("reconnect type %q, want replay: %s", res.Type, raw)
	}
	if len(res.Actions) != len(missed) {
		t.Fatalf("replayed %d envelopes, want %d\ngot: %s", len(res.Actions), len(missed), raw)
	}
	for i := range missed {
		if string(res.Actions[i]) != missed[i] {
			t.Fatalf("replayed envelope %d:\n got %s\nwant %s", i, res.Actions[i], missed[i])
		}
	}
	// The reconnected client is subscribed again: the next turn reaches it.
	sendTurn(t, b, chat, "t3", "third")
	awaitEnd(t, a2, chat, "t3")
}

// TestReconnectFallsBackToSnapshots: once the replay log has moved past
// what the client saw, reconnect answers with fresh snapshots.
func TestReconnectFallsBackToSnapshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) { c.ReplayLog = 8 })
	a := e.client("a")
	b := e.client("b")
	sess, chat := e.createSession(a, "ahp-session:/6f0d1f7a-0000-4000-8000-000000000011")
	a.Subscribe(chat)
	b.Subscribe(chat)
	seen := lastSeq(a)
	a.Close()
	for i, text := range []string{"one", "two", "three"} {
		sendTurn(t, b, chat, "t"+string(rune('1'+i)), text)
	}
	a2 := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	a2.ID = "a"
	raw := a2.MustCall("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "a", "lastSeenServerSeq": seen, "subscriptions": []string{sess, chat, "ahp-chat:/gone"}})
	var res reconnectResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "snapshot" {
		t.Fatalf("reconnect type %q, want snapshot", res.Type)
	}
	if len(res.Snapshots) != 2 {
		t.Fatalf("got %d snapshots, want 2 (session and chat): %s", len(res.Snapshots), raw)
	}
	if len(res.Missing) != 1 || res.Missing[0] != "ahp-chat:/gone" {
		t.Fatalf("missing = %v, want the unknown chat", res.Missing)
	}
	for _, s := range res.Snapshots {
		if s.Resource == chat {
			cs := chatState(t, s.State.(json.RawMessage))
			if len(cs.Turns) != 3 {
				t.Fatalf("chat snapshot holds %d turns, want 3", len(cs.Turns))
			}
			if s.FromSeq < lastSeq(b) {
				t.Fatalf("snapshot fromSeq %d is older than the last envelope %d", s.FromSeq, lastSeq(b))
			}
		}
	}
	sendTurn(t, b, chat, "t9", "after")
	awaitEnd(t, a2, chat, "t9")
}

// awaitIdle waits until c has seen the session say chat is idle again.
func awaitIdle(t testing.TB, c *ahptest.Client, sess, chat string, after int64) {
	t.Helper()
	c.AwaitEnvelope("chat idle on "+sess, func(e ahptest.Envelope) bool {
		if e.Channel != sess || e.Type() != "session/chatUpdated" {
			return false
		}
		var ch string
		var changes struct {
			Status *int `json:"status"`
		}
		_ = e.Field("chat", &ch)
		_ = e.Field("changes", &changes)
		return ch == chat && changes.Status != nil && *changes.Status&8 == 0 && e.ServerSeq > after
	})
}
