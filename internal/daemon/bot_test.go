package daemon_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/host"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/ahpd/ahpd/internal/turns"
)

// A bot's chat hands its turn to the bot's work session, made at the bot's
// creation as an ordinary session on the bot's agent, in its folder, as
// its owner, titled with its name, the instructions its first turn; the
// work session's parts come back as the turn's parts.
func TestBotTurn(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	var root ahp.RootState
	raw, _ := c.Subscribe(ahp.RootURI)
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(root.Agents, func(a ahp.AgentInfo) bool { return a.Provider == "bot" }); i < 0 || strings.Contains(root.Agents[i].Description, "unavailable") {
		t.Fatalf("root agents %+v: want bot, available", root.Agents)
	}
	b := createBot(t, c, map[string]any{"slug": "helper", "name": "Helper", "instructions": "You are Helper.", "agent": "script"})
	if b.Session == "" || b.Folder != filepath.Join(e.cfg.DataDir, "bots", "helper") || b.Owner == "" {
		t.Fatalf("bot %+v", b)
	}
	if fi, err := os.Stat(b.Folder); err != nil || !fi.IsDir() {
		t.Fatalf("bot folder %s: %v", b.Folder, err)
	}
	_, chat := botChat(t, c, "helper")
	if end := sendTurn(t, c, chat, "t1", "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("bot turn ended %s", end.Raw)
	}
	st := stateOf(t, c, chat)
	if got := answerOf(turnOf(t, st, "t1")); got != "echo: hello" {
		t.Fatalf("bot turn answered %q, want the work session's answer", got)
	}
	work := workChat(t, c, b.Session)
	ws := stateOf(t, c, work)
	if got := texts(ws.Turns); !slices.Equal(got, []string{"You are Helper.", "hello"}) {
		t.Fatalf("work session turns %q: the instructions first, then the bot's turn", got)
	}
	var sess ahp.SessionState
	raw, _ = c.Subscribe(b.Session)
	if err := json.Unmarshal(raw, &sess); err != nil {
		t.Fatal(err)
	}
	if sess.Provider != "script" || sess.Title != "Helper" || len(sess.WorkingDirectories) != 1 || sess.WorkingDirectories[0] != ahp.FileURI(b.Folder) {
		t.Fatalf("work session %+v", sess)
	}
	// A second turn goes to the same work session.
	sendTurn(t, c, chat, "t2", "again")
	if got := texts(stateOf(t, c, work).Turns); len(got) != 3 || got[2] != "again" {
		t.Fatalf("work session turns %q", got)
	}
}

// A bot without instructions starts its work session with no turn.
func TestBotWithoutInstructions(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "quiet", "name": "Quiet", "agent": "script"})
	work := workChat(t, c, b.Session)
	if st := stateOf(t, c, work); len(st.Turns) != 0 || st.ActiveTurn != nil {
		t.Fatalf("work session of a bot with no instructions has turns: %+v", st.Turns)
	}
}

// C-TURN-94..97, C-TURN-101, C-TURN-102: a steering message goes to the
// work session as a message queued behind its running turn; the bot's turn
// goes on; the hand-off is answered; once a turn of the work session takes
// it up the chat takes it out, the answer comes in the bot's turn, whose
// record holds the message, and a restart reads back the same turn.
func TestBotSteering(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "steer", "name": "Steer", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "steer")

	startTurn(c, chat, "t1", "[slow] work")
	awaitPart(t, c, chat, "t1")
	// C-TURN-96: the hand-off is answered (the chat says the message).
	awaitAccepted(t, c, setPending(c, chat, ahp.PendingSteering, "s1", "more"))
	// C-TURN-94: in the work session, a message queued behind its
	// running turn.
	queued := c.AwaitEnvelope("the hand-off in the work session", func(e ahptest.Envelope) bool {
		return e.Channel == work && e.Type() == "chat/pendingMessageSet" && field(e, "id") == "s1"
	})
	if k := field(queued, "kind"); k != ahp.PendingQueued {
		t.Fatalf("hand-off is %s in the work session, want queued", k)
	}
	firstEnd := seqOf(c, work, func(e ahptest.Envelope) bool { return isEnding(e.Type()) })
	if firstEnd != 0 && firstEnd < queued.ServerSeq {
		t.Fatalf("the work session's turn had ended (seq %d) before the hand-off (seq %d)", firstEnd, queued.ServerSeq)
	}
	taken := awaitStartOf(t, c, work, "s1")
	removed := awaitRemoval(t, c, chat, "s1")
	// C-TURN-97: taken out once a turn of the work session took it up.
	if removed.ServerSeq < taken.ServerSeq {
		t.Fatalf("steering taken out (seq %d) before the work session took it up (seq %d)", removed.ServerSeq, taken.ServerSeq)
	}
	end := awaitEnd(t, c, chat, "t1")
	// C-TURN-95: the open turn went on: it ended once, after the removal.
	if end.Type() != "chat/turnComplete" || end.ServerSeq < removed.ServerSeq {
		t.Fatalf("bot turn ended %s at seq %d, removal at %d", end.Type(), end.ServerSeq, removed.ServerSeq)
	}
	live := stateOf(t, c, chat)
	if len(live.Turns) != 1 {
		t.Fatalf("bot chat has %d turns, want the one the message went into", len(live.Turns))
	}
	tr := live.Turns[0]
	// C-TURN-101: the record holds the message against the turn it went into.
	if ns := notices(tr); !slices.Contains(ns, "Steering: more") {
		t.Fatalf("turn notices %q, want the steering message", ns)
	}
	if a := answerOf(tr); !strings.Contains(a, "echo: [slow] work") || !strings.Contains(a, "echo: more") {
		t.Fatalf("bot turn answered %q, want both work turns' answers", a)
	}
	if live.SteeringMessage != nil {
		t.Fatalf("steering message still pending: %+v", live.SteeringMessage)
	}
	if n := countText(stateOf(t, c, work), "more"); n != 1 {
		t.Fatalf("the work session ran the steering message %d times", n)
	}

	// C-TURN-102: read back after a restart, the same turn.
	e.restart()
	c2 := e.client("c2")
	back := stateOf(t, c2, chat)
	if comparable(t, back) != comparable(t, live) {
		t.Fatalf("after a restart the bot chat reads\n%s\nlive it was\n%s", comparable(t, back), comparable(t, live))
	}
	// The next turn goes to the same work session.
	sendTurn(t, c2, chat, "t2", "after")
	workNow := workChat(t, c2, b.Session)
	if got := texts(stateOf(t, c2, workNow).Turns); len(got) != 3 || got[2] != "after" {
		t.Fatalf("work session turns after a restart %q", got)
	}
}

// C-TURN-98: a steering message whose turn ended while it was on its way
// goes back to the host, which runs it next as a turn of its own.
func TestBotSteeringReturned(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, true)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "late", "name": "Late", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "late")

	startTurn(c, chat, "t1", "[slow] work")
	awaitPart(t, c, chat, "t1")
	awaitAccepted(t, c, setPending(c, chat, ahp.PendingSteering, "s1", "late word"))
	select {
	case id := <-e.arrived:
		if id != "s1" {
			t.Fatalf("hand-off of %s", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the steering message never went on its way")
	}
	// The work session's turn ends while the message is on its way. The
	// bus hands an envelope to its subscribers one after another, this
	// client maybe before the bot's watch: a draft's echo, published after
	// the end (one publish at a time), says the watch has the end too.
	c.AwaitEnvelope("the work turn's end", func(e ahptest.Envelope) bool { return e.Channel == work && isEnding(e.Type()) })
	draftBarrier(t, c, chat, "meanwhile")
	close(e.release)
	if end := awaitEnd(t, c, chat, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("bot turn ended %s", end.Raw)
	}
	next := awaitStartOf(t, c, chat, "s1")
	if end := awaitEnd(t, c, chat, turnID(next)); end.Type() != "chat/turnComplete" {
		t.Fatalf("the returned message's turn ended %s", end.Raw)
	}
	st := stateOf(t, c, chat)
	if got := answerOf(turnOf(t, st, turnID(next))); got != "echo: late word" {
		t.Fatalf("returned message's turn answered %q", got)
	}
	if ns := notices(turnOf(t, st, "t1")); len(ns) != 0 {
		t.Fatalf("the turn the message never went into holds %q", ns)
	}
	if n := countText(stateOf(t, c, work), "late word"); n != 1 {
		t.Fatalf("the work session ran the returned message %d times", n)
	}
}

// C-TURN-99: a steering message the work session would not take is taken
// out, with the reason in the log, and the turn goes on.
//
// It runs in make check: filling a chat's queue to turns.MaxWaiting costs
// the chat a store of its whole queue per message (20-40 s under -race).
func TestBotSteeringNotSent(t *testing.T) {
	t.Parallel()
	testutil.RequireCheck(t, "fills a queue of turns.MaxWaiting messages")
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "full", "name": "Full", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "full")

	startTurn(c, chat, "t1", "[hold] work")
	awaitPart(t, c, chat, "t1")
	// The work session's queue is full: it refuses one more.
	// (Each is stored before it is said: waiting on every 128th keeps
	// each wait short under the race detector.)
	for i := range turns.MaxWaiting {
		seq := setPending(c, work, ahp.PendingQueued, "q"+itoa(i), "filler")
		if i%128 == 127 {
			awaitAccepted(t, c, seq)
		}
	}
	awaitAccepted(t, c, setPending(c, chat, ahp.PendingSteering, "s1", "one too many"))
	removed := awaitRemoval(t, c, chat, "s1")
	if seqOf(c, chat, func(e ahptest.Envelope) bool { return isEnding(e.Type()) }) != 0 {
		t.Fatal("the bot turn ended with the refused hand-off")
	}
	// The turn goes on: it still answers, and ends when stopped.
	if st := stateOf(t, c, chat); st.ActiveTurn == nil || st.ActiveTurn.ID != "t1" || st.SteeringMessage != nil {
		t.Fatalf("after the refusal: active %+v, steering %+v", st.ActiveTurn, st.SteeringMessage)
	}
	stopTurn(c, chat, "t1")
	if end := awaitEnd(t, c, chat, "t1"); end.Type() != "chat/turnCancelled" || end.ServerSeq < removed.ServerSeq {
		t.Fatalf("bot turn ended %s", end.Raw)
	}
	if n := countText(stateOf(t, c, work), "one too many"); n != 0 {
		t.Fatalf("the work session ran the refused message")
	}
}

// C-TURN-100: a steering message the work session never took up is taken
// out when the turn ends, and out of the work session's queue with it: here
// the work session's own client stops its turn, which starts nothing behind.
func TestBotSteeringNeverTakenUp(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "stopped", "name": "Stopped", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "stopped")

	startTurn(c, chat, "t1", "[hold] work")
	awaitPart(t, c, chat, "t1")
	awaitAccepted(t, c, setPending(c, chat, ahp.PendingSteering, "s1", "never"))
	c.AwaitEnvelope("the hand-off in the work session", func(e ahptest.Envelope) bool {
		return e.Channel == work && e.Type() == "chat/pendingMessageSet" && field(e, "id") == "s1"
	})
	workTurn := c.AwaitEnvelope("the work turn", func(e ahptest.Envelope) bool { return e.Channel == work && e.Type() == "chat/turnStarted" })
	stopTurn(c, work, turnID(workTurn))
	end := awaitEnd(t, c, chat, "t1")
	if end.Type() != "chat/turnCancelled" {
		t.Fatalf("bot turn ended %s, want the work turn's stop", end.Raw)
	}
	removed := awaitRemoval(t, c, chat, "s1")
	if removed.ServerSeq < end.ServerSeq {
		t.Fatal("steering taken out before the turn ended")
	}
	awaitRemoval(t, c, work, "s1")
	time.Sleep(300 * time.Millisecond) // deliberate: the message does not run in this stretch either
	ws := stateOf(t, c, work)
	if n := countText(ws, "never"); n != 0 || len(ws.QueuedMessages) != 0 {
		t.Fatalf("the work session ran it %d times, queue %+v", n, ws.QueuedMessages)
	}
	if st := stateOf(t, c, chat); st.SteeringMessage != nil || len(st.Turns) != 1 {
		t.Fatalf("bot chat after the turn: steering %+v, %d turns", st.SteeringMessage, len(st.Turns))
	}
}

// C-TURN-103..106: a bot's chat runs one turn at a time: a turn sent
// behind goes to the work session once the one in front ended, and a stop
// runs none of the turns sent behind it, which the host ends.
func TestBotOneTurnAtATime(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "one", "name": "One", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "one")

	startTurn(c, chat, "t1", "[slow] first")
	startTurn(c, chat, "t2", "second")
	awaitEnd(t, c, chat, "t1")
	awaitEnd(t, c, chat, "t2")
	firstEnd := seqOf(c, work, func(e ahptest.Envelope) bool { return isEnding(e.Type()) })
	secondStart := seqOf(c, work, func(e ahptest.Envelope) bool {
		var m ahp.Message
		return e.Type() == "chat/turnStarted" && e.Field("message", &m) == nil && m.Text == "second"
	})
	if secondStart == 0 || secondStart < firstEnd {
		t.Fatalf("the second turn reached the work session at seq %d, the first ended at %d", secondStart, firstEnd)
	}

	startTurn(c, chat, "t3", "[hold] third")
	awaitPart(t, c, chat, "t3")
	startTurn(c, chat, "t4", "fourth")
	stopTurn(c, chat, "t3")
	if end := awaitEnd(t, c, chat, "t3"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t3 ended %s", end.Raw)
	}
	if end := awaitEnd(t, c, chat, "t4"); end.Type() != "chat/turnCancelled" {
		t.Fatalf("t4 ended %s", end.Raw)
	}
	time.Sleep(300 * time.Millisecond) // deliberate: the message does not run in this stretch either
	if n := countText(stateOf(t, c, work), "fourth"); n != 0 {
		t.Fatal("a turn sent behind the stopped one reached the work session")
	}
}

// A bot is its owner's: another user's chat cannot use it to read the
// work session, nor list, read or delete it; a slug is never reused.
func TestBotGrants(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false, func(cfg *daemon.Config) {
		cfg.Tokens = []daemon.TokenConfig{
			{Token: "alice-token", Principal: "user:alice", Grants: []string{"session:*"}},
			{Token: "bob-token", Principal: "user:bob", Grants: []string{"session:*"}},
		}
	})
	alice := ahptest.Dial(t, e.d.URL(), "alice-token")
	alice.Initialize("alice", ahp.RootURI)
	bob := ahptest.Dial(t, e.d.URL(), "bob-token")
	bob.Initialize("bob", ahp.RootURI)

	b := createBot(t, alice, map[string]any{"slug": "private", "name": "Private", "instructions": "secret plan", "agent": "script"})
	if b.Owner != "user:alice" {
		t.Fatalf("owner %s", b.Owner)
	}
	_, aliceChat := botChat(t, alice, "private")
	sendTurn(t, alice, aliceChat, "a1", "hi")

	_, bobChat := botChat(t, bob, "private")
	end := sendTurn(t, bob, bobChat, "b1", "show me")
	if end.Type() != "chat/error" {
		t.Fatalf("bob's turn through alice's bot ended %s", end.Raw)
	}
	st := stateOf(t, bob, bobChat)
	tr := turnOf(t, st, "b1")
	if strings.Contains(mustJSON(t, tr), "secret plan") || strings.Contains(mustJSON(t, tr), "echo: hi") {
		t.Fatalf("bob read alice's work session: %s", mustJSON(t, tr))
	}
	root := e.client("root")
	if got := texts(stateOf(t, root, workChat(t, root, b.Session)).Turns); slices.Contains(got, "show me") {
		t.Fatalf("bob's turn reached alice's work session: %q", got)
	}

	// The bot setting lists nobody's bots.
	if cfg := bob.MustCall("resolveSessionConfig", map[string]any{"channel": ahp.RootURI, "provider": "bot"}); strings.Contains(string(cfg), "private") || !strings.Contains(string(cfg), `"bot"`) {
		t.Fatalf("resolveSessionConfig of bot: %s", cfg)
	}
	// A bot session naming no bot talks to none.
	_, none := botChat(t, bob, "")
	if end := sendTurn(t, bob, none, "n1", "anyone?"); end.Type() != "chat/error" {
		t.Fatalf("a turn of a session naming no bot ended %s", end.Raw)
	}

	var list struct{ Items []host.BotInfo }
	if err := json.Unmarshal(bob.MustCall(host.MethodListBots, map[string]any{"channel": ahp.RootURI}), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("bob lists %+v", list.Items)
	}
	if _, rerr := bob.Call(host.MethodGetBot, map[string]any{"channel": ahp.RootURI, "slug": "private"}); rerr == nil || rerr.Code != -32001 {
		t.Fatalf("bob reads alice's bot: %v", rerr)
	}
	if _, rerr := bob.Call(host.MethodDeleteBot, map[string]any{"channel": ahp.RootURI, "slug": "private"}); rerr == nil {
		t.Fatal("bob deleted alice's bot")
	}
	// Bob cannot make a bot work in alice's folder-less session of his choice.
	if _, rerr := bob.Call(host.MethodCreateBot, map[string]any{"channel": ahp.RootURI, "slug": "sneak", "name": "Sneak", "session": b.Session}); rerr == nil {
		t.Fatal("bob linked a bot to alice's work session")
	}
	// A folder outside the served paths is refused.
	if _, rerr := alice.Call(host.MethodCreateBot, map[string]any{"channel": ahp.RootURI, "slug": "escape", "name": "Escape", "agent": "script", "folder": "/"}); rerr == nil {
		t.Fatal("a bot was made to work in /")
	}

	alice.MustCall(host.MethodDeleteBot, map[string]any{"channel": ahp.RootURI, "slug": "private"})
	if _, rerr := alice.Call(host.MethodCreateBot, map[string]any{"channel": ahp.RootURI, "slug": "private", "name": "Again", "agent": "script"}); rerr == nil {
		t.Fatal("a deleted bot's slug was reused")
	}
	if end := sendTurn(t, alice, aliceChat, "a2", "still there?"); end.Type() != "chat/error" {
		t.Fatalf("a turn to a deleted bot ended %s", end.Raw)
	}
}

// A bot linked to an existing session of its owner works there.
func TestBotLinkedSession(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	sess, def := e.createSession(c, "ahp-session:/linked-work")
	c.Subscribe(def)
	sendTurn(t, c, def, "w1", "earlier work")
	b := createBot(t, c, map[string]any{"slug": "linked", "name": "Linked", "session": sess})
	if !b.Linked || b.Session != sess || b.Agent != "script" {
		t.Fatalf("linked bot %+v", b)
	}
	_, chat := botChat(t, c, "linked")
	sendTurn(t, c, chat, "t1", "continue")
	if got := texts(stateOf(t, c, def).Turns); !slices.Equal(got, []string{"earlier work", "continue"}) {
		t.Fatalf("linked session turns %q", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A steering message left in the work session's queue by a turn a restart
// ended is taken back before the bot chat's next turn: the bot chat, which
// still holds it, steers that turn with it or runs it as a turn of its own,
// and the work session runs it that once, never on its own as well.
func TestBotRestartTakesBackHandOff(t *testing.T) {
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "restarts", "name": "Restarts", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "restarts")

	startTurn(c, chat, "t1", "[hold] work")
	awaitPart(t, c, chat, "t1")
	awaitAccepted(t, c, setPending(c, chat, ahp.PendingSteering, "s1", "stale word"))
	c.AwaitEnvelope("the hand-off in the work session", func(e ahptest.Envelope) bool {
		return e.Channel == work && e.Type() == "chat/pendingMessageSet" && field(e, "id") == "s1"
	})
	e.restart()
	c2 := e.client("c2")
	if ws := stateOf(t, c2, work); len(ws.QueuedMessages) != 1 || ws.QueuedMessages[0].Message.Meta == nil {
		t.Fatalf("after the restart the work session holds %+v", ws.QueuedMessages)
	}
	c2.Subscribe(chat)
	if end := sendTurn(t, c2, chat, "t2", "next"); end.Type() != "chat/turnComplete" {
		t.Fatalf("t2 ended %s", end.Raw)
	}
	awaitRemoval(t, c2, work, "s1")
	// The bot chat still holds the message: it steers the next turn or
	// runs as a turn of its own, whichever comes first; either way once.
	var st ahp.ChatState
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st = stateOf(t, c2, chat)
		if st.SteeringMessage == nil && st.ActiveTurn == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot chat never settled: steering %+v, active %+v", st.SteeringMessage, st.ActiveTurn)
		}
	}
	time.Sleep(300 * time.Millisecond) // deliberate: the message does not run in this stretch either
	ws := stateOf(t, c2, work)
	if n := countText(ws, "stale word"); n != 1 || len(ws.QueuedMessages) != 0 {
		t.Fatalf("the work session ran the message %d times; queue %+v; turns %q", n, ws.QueuedMessages, texts(ws.Turns))
	}
	steered := slices.Contains(notices(turnOf(t, st, "t2")), "Steering: stale word")
	ownTurn := slices.ContainsFunc(st.Turns, func(tr ahp.Turn) bool {
		return tr.Message.Text == "stale word" && answerOf(tr) == "echo: stale word"
	})
	if steered == ownTurn {
		t.Fatalf("the message steered t2: %v, ran as a turn of its own: %v; want one of them", steered, ownTurn)
	}
}

// A tool call of the work session that waits for confirmation waits in the
// bot's chat too, and the answer given there goes to the work session.
func TestBotToolConfirmation(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "tools", "name": "Tools", "agent": "script"})
	work := workChat(t, c, b.Session)
	_, chat := botChat(t, c, "tools")

	startTurn(c, chat, "t1", "[confirm] go")
	ready := awaitTyped(t, c, chat, "chat/toolCallReady", "t1")
	call := field(ready, "toolCallId")
	if call == "" {
		t.Fatalf("tool call %s", ready.Raw)
	}
	awaitAccepted(t, c, c.Dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": call, "approved": true}))
	c.AwaitEnvelope("the confirmation in the work session", func(e ahptest.Envelope) bool {
		return e.Channel == work && e.Type() == "chat/toolCallConfirmed" && field(e, "toolCallId") == call
	})
	if end := awaitEnd(t, c, chat, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("bot turn ended %s", end.Raw)
	}
	tr := turnOf(t, stateOf(t, c, chat), "t1")
	var done bool
	for _, p := range tr.ResponseParts {
		if p.Kind == ahp.PartToolCall && p.ToolCall != nil && p.ToolCall.ToolCallID == call && p.ToolCall.Status == "completed" {
			done = true
		}
	}
	if !done || answerOf(tr) != "echo: [confirm] go" {
		t.Fatalf("bot turn: tool done %v, answered %q", done, answerOf(tr))
	}
}

// TestBotRelaysAttachments: a bot turn's attachments reach the work
// session's turn (issue 35 §5): an image and pasted text as bytes the work
// session writes into its own attachments folder and hands its agent as
// an image and inline text, a PDF by the path the bot's chat wrote it to.
func TestBotRelaysAttachments(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, false)
	c := e.client("c1")
	b := createBot(t, c, map[string]any{"slug": "relay", "name": "Relay", "agent": "script"})
	_, chat := botChat(t, c, "relay")
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	pdf := []byte("%PDF-1.4 not really")
	c.Dispatch(chat, turnWith("t1", "look at these",
		embedded("shot.png", "image/png", png), embedded("notes.txt", "text/plain", []byte("pasted words")), embedded("doc.pdf", "application/pdf", pdf)))
	if end := awaitEnd(t, c, chat, "t1"); end.Type() != "chat/turnComplete" {
		t.Fatalf("bot turn ended %s", end.Raw)
	}
	var work agent.Turn
	for _, tr := range e.script.Sent() {
		if tr.Text == "look at these" {
			work = tr
		}
	}
	got := work.Attachments
	if len(got) != 3 {
		t.Fatalf("the work session's agent got %d attachments: %+v", len(got), got)
	}
	workID, _ := ahp.SessionID(b.Session)
	workRoot := filepath.Join(e.cfg.DataDir, "attachments", workID)
	if got[0].As != attach.AsImage || !bytes.Equal(got[0].Data, png) || !strings.HasPrefix(got[0].Path, workRoot) {
		t.Errorf("the image reached the work session as %q %d bytes at %s", got[0].As, len(got[0].Data), got[0].Path)
	}
	if got[1].As != attach.AsInline || got[1].Text != "pasted words" || !strings.HasPrefix(got[1].Path, workRoot) {
		t.Errorf("the text reached the work session as %q %q at %s", got[1].As, got[1].Text, got[1].Path)
	}
	if got[2].As != attach.AsPath || got[2].Label != "doc.pdf" {
		t.Fatalf("the pdf reached the work session as %+v", got[2])
	}
	if data, err := os.ReadFile(got[2].Path); err != nil || !bytes.Equal(data, pdf) {
		t.Errorf("the pdf's path %s holds %d bytes, %v", got[2].Path, len(data), err)
	}
}
