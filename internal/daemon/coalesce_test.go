package daemon_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// subscribeWith subscribes c to channel with params beside channel and
// returns the snapshot's chat state and serverSeq.
func subscribeWith(t *testing.T, c *ahptest.Client, channel string, extra map[string]any) (ahp.ChatState, int64) {
	t.Helper()
	st, from := c.SubscribeWith(channel, extra)
	return chatState(t, st), from
}

// foldChat applies what c received on chat after from to st, checking the
// serverSeqs rise strictly; it returns the state and the envelopes folded.
func foldChat(t *testing.T, c *ahptest.Client, chat string, st ahp.ChatState, from int64) (ahp.ChatState, int) {
	t.Helper()
	n, last := 0, int64(0)
	for _, env := range c.Envelopes() {
		if env.ServerSeq <= last {
			t.Fatalf("serverSeq %d after %d: a connection reads them rising", env.ServerSeq, last)
		}
		last = env.ServerSeq
		if env.Channel != chat || env.ServerSeq <= from || env.RejectionReason != "" {
			continue
		}
		a, err := ahp.DecodeAction(env.Action)
		if err != nil {
			t.Fatal(err)
		}
		reduce.Chat(&st, a)
		n++
	}
	return st, n
}

// TestSubscribeDeliveryMaxLatencyCoalescesDeltas: a subscriber that accepts
// 200 ms of latency (subscribe's delivery.maxLatencyMs, issue 37) gets a
// burst's deltas of one part merged into fewer envelopes, and the state it
// folds is identical to the one a subscriber that asked for every delta
// folds; its serverSeqs still rise.
func TestSubscribeDeliveryMaxLatencyCoalescesDeltas(t *testing.T) {
	e := newScriptEnv(t, script.Options{}, true)
	driver := e.client("driver")
	_, chat := e.createSession(driver, "script:/c0a1e5ce-0000-4000-8000-000000000001")
	merged := e.client("merged")
	every := e.client("every")
	mst, mfrom := subscribeWith(t, merged, chat, map[string]any{"delivery": map[string]any{"maxLatencyMs": 200}})
	est, efrom := subscribeWith(t, every, chat, map[string]any{"delivery": map[string]any{"maxLatencyMs": 0}})
	driver.Dispatch(chat, turnStarted("t1", "[burst:400] stream it"))
	for _, c := range []*ahptest.Client{merged, every} {
		c.AwaitAction(chat, "chat/turnComplete")
	}
	mst, mn := foldChat(t, merged, chat, mst, mfrom)
	est, en := foldChat(t, every, chat, est, efrom)
	if !reflect.DeepEqual(mst, est) {
		a, _ := json.Marshal(mst)
		b, _ := json.Marshal(est)
		t.Fatalf("the merged stream folds to\n%s\nthe whole stream to\n%s", a, b)
	}
	if len(mst.Turns) != 1 || len(mst.Turns[0].ResponseParts) == 0 {
		t.Fatalf("the turn did not fold: %+v", mst.Turns)
	}
	if mn >= en/2 {
		t.Fatalf("the merged subscriber got %d envelopes, the other %d: nothing merged", mn, en)
	}
	t.Logf("%d envelopes merged into %d", en, mn)
}

// TestSubscribeDeliveryRefusals: a negative maxLatencyMs is -32602 and the
// connection goes on.
func TestSubscribeDeliveryRefusals(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t, script.Options{}, true)
	c := e.client("c")
	_, chat := e.createSession(c, "script:/c0a1e5ce-0000-4000-8000-000000000002")
	_, err := c.Call("subscribe", map[string]any{"channel": chat, "delivery": map[string]any{"maxLatencyMs": -1}})
	if err == nil || err.Code != ahp.CodeInvalidParams {
		t.Fatalf("maxLatencyMs -1: %v, want -32602", err)
	}
	c.MustCall("ping", map[string]any{})
}
