package daemon_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// awaitSessionStatus waits for a root/sessionSummaryChanged of sess that
// carries status want, among the frames after the first from.
func awaitSessionStatus(t *testing.T, c *ahptest.Client, from int, sess string, want ahp.SessionStatus) {
	t.Helper()
	c.AwaitFrame(fmt.Sprintf("%s's status %d", sess, want), from, func(f ahptest.Frame) bool {
		var p ahp.SessionSummaryChangedParams
		return f.Method == "root/sessionSummaryChanged" && json.Unmarshal(f.Params, &p) == nil && p.Session == sess &&
			p.Changes.Status != nil && *p.Changes.Status&ahp.StatusActivityMask == want
	})
}

// TestSessionStatusFollowsItsChats (issue 31; AHP's aggregation rule for
// SessionSummary.status): a session's status is its chats' activity. Its
// default chat running shows InProgress, waiting on a confirmation shows
// InputNeeded, and idle again shows Idle, each told to root watchers in
// root/sessionSummaryChanged and held in the session's state and listing;
// a peer chat at work raises an idle session to InProgress.
func TestSessionStatusFollowsItsChats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/57a7e500-0000-4000-8000-000000000001")
	a.Subscribe(def)

	from := len(a.Frames())
	a.Dispatch(def, turnStarted("s1", "[confirm] may I?"))
	awaitSessionStatus(t, a, from, sess, ahp.StatusInProgress)
	ready := a.AwaitAction(def, "chat/toolCallReady")
	awaitSessionStatus(t, a, from, sess, ahp.StatusInputNeeded)
	if st := sessionState(t, a, sess); st.Status&ahp.StatusActivityMask != ahp.StatusInputNeeded {
		t.Fatalf("the session's state while its chat asks: status %d", st.Status)
	}
	var call string
	if err := ready.Field("toolCallId", &call); err != nil {
		t.Fatal(err)
	}
	from = len(a.Frames())
	a.Dispatch(def, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "s1", "toolCallId": call,
		"approved": true, "confirmed": "user-action"})
	awaitEnd(t, a, def, "s1")
	awaitSessionStatus(t, a, from, sess, ahp.StatusIdle)

	// A peer chat's turn raises the idle session.
	const peer = "ahp-chat:/57a7e500-0000-4000-8000-0000000000c2"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": peer})
	a.Subscribe(peer)
	from = len(a.Frames())
	a.Dispatch(peer, turnStarted("p1", "[slow] take your time"))
	awaitSessionStatus(t, a, from, sess, ahp.StatusInProgress)
	awaitEnd(t, a, peer, "p1")
	awaitSessionStatus(t, a, from, sess, ahp.StatusIdle)
	var list ahp.ListSessionsResult
	if err := json.Unmarshal(a.MustCall("listSessions", map[string]any{"channel": ahp.RootURI}), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Status&ahp.StatusActivityMask != ahp.StatusIdle {
		t.Fatalf("listSessions after the turns: %+v", list.Items)
	}
}
