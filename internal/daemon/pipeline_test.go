package daemon_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestPipelinedCommitsTellOnlyWhatIsStored: a chat's actor goes on while
// its commits are in flight (internal/chat/durable.go), and still tells
// nothing a commit has not stored. With the store's writer stalled, a turn
// sent behind the running one and a draft are not told, and a client
// subscribing waits for its snapshot (which would show them); once the
// store writes again the draft is told, the snapshot holds it (and the
// draft is not told to that client again), and the turn that waited
// starts for both.
func TestPipelinedCommitsTellOnlyWhatIsStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, def := chatWithHeldTurn(t, e, "ahp-session:/919e0000-0000-4000-8000-000000000001")

	release := stallStore(t, e)

	mark := len(a.Envelopes())
	startTurn(a, def, "t2", "behind the first")
	// b sends the draft and then subscribes on one connection, so the
	// chat takes them in that order (two connections' frames race).
	b := e.client("b")
	draftSeq := b.Dispatch(def, map[string]any{"type": "chat/draftChanged", "draft": userMessage("next")})
	sub := b.Request("subscribe", map[string]any{"channel": def})

	time.Sleep(300 * time.Millisecond)
	for _, env := range a.Envelopes()[mark:] {
		if env.Channel == def && (env.Type() == "chat/draftChanged" || env.Type() == "chat/turnStarted") {
			t.Fatalf("told while the store could not write: %s", env.Action)
		}
	}
	for _, f := range b.Frames() {
		if string(f.ID) == sub {
			t.Fatalf("a snapshot answered while the store could not write: %s", f.Result)
		}
	}

	release()
	a.AwaitEnvelope("the draft", func(env ahptest.Envelope) bool {
		return env.Channel == def && env.Type() == "chat/draftChanged" && env.Origin != nil && env.Origin.ClientSeq == draftSeq
	})
	reply := b.Await(sub)
	if reply.Error != nil {
		t.Fatalf("subscribe: %v", reply.Error)
	}
	var snap struct {
		Snapshot struct {
			State struct {
				Draft *struct {
					Text string `json:"text"`
				} `json:"draft"`
			} `json:"state"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(reply.Result, &snap); err != nil {
		t.Fatal(err)
	}
	if d := snap.Snapshot.State.Draft; d == nil || d.Text != "next" {
		t.Fatalf("the snapshot taken after the stall has draft %+v, want %q", d, "next")
	}

	a.AwaitEcho(a.Dispatch(def, map[string]any{"type": "chat/turnCancelled", "turnId": "t1"}))
	awaitTyped(t, a, def, "chat/turnStarted", "t2")
	awaitTyped(t, b, def, "chat/turnStarted", "t2")
	for _, env := range b.Envelopes() {
		if env.Channel == def && env.Type() == "chat/draftChanged" {
			t.Errorf("the draft its snapshot held was told to the subscriber again: %s", env.Action)
		}
	}
}

// TestSteeringReachesTheBackendOnlyOnceStored: a client's action that is
// not pipelined waits for its own commit before what follows it in the
// step: a steering message is handed to the running turn's backend only
// once the chat's record holding it is stored.
func TestSteeringReachesTheBackendOnlyOnceStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, def := chatWithHeldTurn(t, e, "ahp-session:/919e0000-0000-4000-8000-000000000002")

	release := stallStore(t, e)
	seq := a.Dispatch(def, map[string]any{"type": "chat/pendingMessageSet", "kind": "steering", "id": "s1", "message": userMessage("turn left")})
	time.Sleep(300 * time.Millisecond)
	for _, st := range e.script.Steers() {
		if st.Steering.ID == "s1" {
			t.Fatal("the backend was handed a steering message the store did not hold")
		}
	}
	release()
	a.AwaitEcho(seq)
	// Polled: the backend is handed it after the echo, and no frame need
	// follow to wake a client's wait.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		for _, st := range e.script.Steers() {
			if st.Steering.ID == "s1" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the steering message was never handed to the backend")
		}
	}
}

// chatWithHeldTurn is client a watching the default chat of a new session
// whose turn t1 runs until it is stopped.
func chatWithHeldTurn(t *testing.T, e *testEnv, session string) (a *ahptest.Client, def string) {
	t.Helper()
	a = e.client("a")
	_, def = e.createSession(a, session)
	a.Subscribe(def)
	a.Dispatch(def, turnStarted("t1", "keep going [hold]"))
	awaitTyped(t, a, def, "chat/turnStarted", "t1")
	return a, def
}

// stallStore stops the store's writer until the returned func is called
// (or the test ends): an op queued behind everything waits on it.
func stallStore(t *testing.T, e *testEnv) (release func()) {
	t.Helper()
	stalled, gate := make(chan struct{}), make(chan struct{})
	e.d.Store().Enqueue(func(context.Context, *store.Store) error {
		close(stalled)
		<-gate
		return nil
	})
	<-stalled
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // so the daemon can close
	return release
}

// TestCanvasStateToldOnlyOnceStored: a canvas drawn again is told on its
// channel only once the chat's record holding its new state is stored
// (the draw commits outside a pipelined step, so it waits for its commit).
func TestCanvasStateToldOnlyOnceStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/919e0000-0000-4000-8000-000000000003")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	dev := devServer(t)
	uri := showPage(t, tools, map[string]any{"url": dev, "title": "Dev"})
	a.Subscribe(uri)

	release := stallStore(t, e)
	drawn := make(chan struct{})
	go func() {
		defer close(drawn)
		showPage(t, tools, map[string]any{"url": dev, "canvas": uri, "status": "Rebuilt", "title": "Dev"})
	}()
	rebuilt := func(env ahptest.Envelope) bool {
		return env.Channel == uri && env.Type() == ahp.ActionCanvasStateChanged && strings.Contains(string(env.Action), "Rebuilt")
	}
	time.Sleep(300 * time.Millisecond)
	for _, env := range a.Envelopes() {
		if rebuilt(env) {
			t.Fatalf("the canvas's new state was told before it was stored: %s", env.Raw)
		}
	}
	release()
	<-drawn
	a.AwaitEnvelope("the canvas drawn again", rebuilt)
}
