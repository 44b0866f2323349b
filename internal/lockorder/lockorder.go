// Package lockorder names the mutexes that more than one goroutine takes,
// ranks them, and checks the order they are taken in. A goroutine may
// take a mutex only while every mutex it already holds has a lower rank;
// taking them in rank order everywhere is what rules out a deadlock
// between two of them.
//
// The ranks, lowest first, are the list below: the order is written once,
// here, beside the locks it governs. Built with the tag lockcheck (make
// test builds with it), every Lock checks the goroutine's held mutexes
// and panics on an inversion, naming both; without the tag a Mutex is a
// sync.Mutex and costs nothing more.
package lockorder

import (
	"fmt"
	"sync"
)

// Rank orders mutexes: a goroutine takes them in increasing rank.
type Rank int

// The ranks, in the order a goroutine may take them. A mutex held while
// another is taken must come first here.
const (
	_ Rank = iota
	// HostBots serialises making a bot's work session (host/bots.go,
	// botDesk.mu); it is held while the session is made, which takes the
	// sessions catalogue and the bus inside.
	HostBots
	// HostTell orders what root watchers hear of sessions
	// (host/sessions.go, sessionDesk.tell): a session's root/sessionAdded
	// and the summary changes around it, each with the catalogue update
	// it says; the catalogue and the bus are taken inside.
	HostTell
	// HostAutomations guards the automation catalogue and its runs
	// (host/automations.go, automationDesk.mu); a change is stored and
	// published under it and a snapshot taken as the bus subscribes, so
	// the bus's lock is taken inside. The root desk's is taken after it
	// is released, never inside.
	HostAutomations
	// HostRoot guards the root state (host/root.go, rootDesk.mu); a root
	// action is reduced and published under it, and a root snapshot taken
	// as the bus subscribes, so the bus's lock is taken inside.
	HostRoot
	// HostSessions guards the sessions catalogue (host/catalogue.go,
	// catalogue.mu): the session actors by URI, their last summaries, the
	// chat index and the registrations from a backend's catalogue under
	// way. It is held for the maps only; nothing is taken inside it.
	HostSessions
	// HostConns guards the host's connections by rpc.Conn (host/conns.go);
	// nothing is taken inside it.
	HostConns
	// HostLanes guards the dispatch and request lanes (host/lanes.go); a
	// lane's work runs outside it, and nothing is taken inside it.
	HostLanes
	// HostActors guards the index of live chat actors (host/lanes.go);
	// nothing is taken inside it.
	HostActors
	// AgentSlots guards the agent process slots (agentslots.Pool.mu): who
	// holds a slot, who waits, which idle agent is asked to close. A chat
	// actor takes it holding no other; what the pool decides is posted to
	// the chats after it is released, and nothing is taken inside it.
	AgentSlots
	// HostFileIndex guards the completions' recent listings of working
	// directories (host/completions.go); held for the map only, a
	// directory is walked outside it, and nothing is taken inside it.
	HostFileIndex
	// HostGit guards the git sessions' records, the changeset channels
	// watched and the refreshes queued (host/gitsessions.go); held for the
	// maps only: git runs, and the bus and lanes are taken, outside it.
	HostGit
	// HostSpawns counts the sessions and chats each session's agent made
	// with the create_session tool (host/spawn.go); held for the count
	// only, and nothing is taken inside it.
	HostSpawns
	// HostWatches guards the host's resource watches (host/resources.go);
	// a client is subscribed to a watch, and a watch's subscribers are
	// counted, under it, so the bus's lock is taken inside.
	HostWatches
	// Bus guards serverSeq, the replay log and the subscriptions; the
	// subscribers' Deliver and Subscribed run under it.
	Bus
	// HostClient guards one connection's identity, the snapshots its
	// replies await and its OTLP log subscriptions (host/client.go); taken
	// under Bus by Subscribed, Knows and ClientID, and by a root
	// notification's choice of form; Subscribed holds the connection's
	// notifications (the outbox's lock) under it. A log subscription is
	// never closed under it.
	HostClient
	// Outbox guards one connection's queue of frames; every notification
	// and reply is queued under it, the innermost lock.
	Outbox
	lastRank
)

var rankNames = [...]string{
	HostBots:        "HostBots",
	HostTell:        "HostTell",
	HostAutomations: "HostAutomations",
	HostRoot:        "HostRoot",
	HostSessions:    "HostSessions",
	HostConns:       "HostConns",
	HostLanes:       "HostLanes",
	HostActors:      "HostActors",
	AgentSlots:      "AgentSlots",
	HostFileIndex:   "HostFileIndex",
	HostGit:         "HostGit",
	HostSpawns:      "HostSpawns",
	HostWatches:     "HostWatches",
	Bus:             "Bus",
	HostClient:      "HostClient",
	Outbox:          "Outbox",
}

func (r Rank) String() string {
	if r > 0 && r < lastRank {
		return rankNames[r]
	}
	return fmt.Sprintf("Rank(%d)", int(r))
}

// Mutex is a sync.Mutex with a rank. Its zero value is unusable for the
// check (rank 0 is below every rank, so nothing can be taken inside it and
// it panics under lockcheck): set Rank where the mutex is made.
type Mutex struct {
	Rank Rank
	mu   sync.Mutex
}

// Lock takes m; under lockcheck it first checks the goroutine holds no
// mutex of m's rank or above.
func (m *Mutex) Lock() {
	if enabled {
		acquire(m.Rank)
	}
	m.mu.Lock()
}

// Unlock releases m.
func (m *Mutex) Unlock() {
	if enabled {
		release(m.Rank)
	}
	m.mu.Unlock()
}

// held is what one goroutine holds, in the order it took them.
type held []Rank

// check reports the inversion taking r would make, if any: the held rank
// that is not below r.
func (h held) check(r Rank) error {
	if r <= 0 || r >= lastRank {
		return fmt.Errorf("lockorder: taking a mutex of no rank (%v): set its Rank", r)
	}
	for _, have := range h {
		if have >= r {
			return fmt.Errorf("lockorder: taking %v while holding %v (held: %v); the order is lockorder's rank list", r, have, []Rank(h))
		}
	}
	return nil
}

// without returns h less the last r in it (a mutex may be released out of
// the order it was taken in).
func (h held) without(r Rank) held {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == r {
			return append(h[:i], h[i+1:]...)
		}
	}
	return h
}
