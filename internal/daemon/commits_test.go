package daemon_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/agent/script"
)

// TestATurnCostsTwoCommits: publish only what is stored costs two commits
// per turn, no more (the turn's start, its end with the chat's record):
// over 100 turns one after another, the store's writer opens two
// transactions a turn, and nothing is written behind them (the session's
// modification time is its newest chat's, stored by the chat's commit).
func TestATurnCostsTwoCommits(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t, script.Options{}, true)
	c := e.client("driver")
	_, chat := e.createSession(c, "script:/c0a1e5ce-0000-4000-8000-0000000000c2")
	c.Subscribe(chat)
	for i := range 3 { // the first turns title the chat and the session
		sendTurn(t, c, chat, fmt.Sprint("warm", i), "a turn")
	}
	before := e.d.Store().Stats()
	const turns = 100
	for i := range turns {
		sendTurn(t, c, chat, fmt.Sprint("t", i), "a turn")
	}
	after := e.d.Store().Stats()
	groups, ops := after.Groups-before.Groups, after.Written-before.Written
	// Two of slack: a write that is no turn's (the session's first
	// activity settling) may fall in the window; a per-turn cost cannot.
	if groups > 2*turns+2 || ops > 2*turns+2 {
		t.Fatalf("%d turns cost %d transactions and %d writes; want at most 2 a turn", turns, groups, ops)
	}
}

// TestTurnsSentBehindCommitWithTheEndingBeforeThem: turns a client sends
// while one runs wait behind it; each one's start commits in the same
// transaction as the ending before it and what then waits (durable.hold),
// so a chat working through its queue pays two commits a turn (the turn
// sent behind, its ending with the next start) where it paid four. Every
// turn still ends, in order, and is stored ended.
func TestTurnsSentBehindCommitWithTheEndingBeforeThem(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t, script.Options{}, true)
	c := e.client("driver")
	_, chat := e.createSession(c, "script:/c0a1e5ce-0000-4000-8000-0000000000c3")
	c.Subscribe(chat)
	for i := range 3 { // the first turns title the chat and the session
		sendTurn(t, c, chat, fmt.Sprint("warm", i), "a turn")
	}
	before := e.d.Store().Stats()
	const turns = 40
	for i := range turns {
		c.Dispatch(chat, turnStarted(fmt.Sprint("q", i), "[think] a queued turn"))
	}
	for i := range turns {
		awaitEnd(t, c, chat, fmt.Sprint("q", i))
	}
	after := e.d.Store().Stats()
	groups := after.Groups - before.Groups
	if groups > 2*turns+2 {
		t.Fatalf("%d turns sent behind one another cost %d transactions; want at most 2 a turn", turns, groups)
	}
	recs, err := e.d.Store().Turns(t.Context(), chat)
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, r := range recs {
		if strings.HasPrefix(r.ID, "q") && r.State == "complete" {
			ended++
		}
	}
	if ended != turns {
		t.Fatalf("%d of %d turns stored complete", ended, turns)
	}
	t.Logf("%d turns: %d transactions", turns, groups)
}
