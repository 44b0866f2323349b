package chat

import (
	"context"
	"errors"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/google/uuid"
)

// Worker chats (CHATS.md "Subagents").
//
// A worker runs in the backend conversation of the chat it was spawned
// from: every event of it arrives on that chat's event channel. That chat,
// the root chat, keeps the book of the workers its conversation spawned
// (nested ones too) and routes each worker's events to the worker chat's own
// actor, which applies them to its state: through the session's mailbox
// until the session says which actor it reached (Relayed), then straight
// into that actor's mailbox. Nothing here calls the session synchronously:
// OpenWorker and Relay only push into its mailbox, whose order keeps a
// worker's open ahead of its events, and a direct post waits until no relay
// is in the session's hands, so it never overtakes one.
//
//	1. the backend reports EventWorkerStarted for a spawning call: the root
//	   chat mints the worker's URI, notes it on the call and asks the session
//	   to open the worker chat, which says session/chatAdded and the worker's
//	   turn with the prompt the parent agent wrote;
//	2. events whose Worker names it go to that chat as parts of its turn;
//	3. EventWorkerEnded (or the end of the turn that spawned it, C-TURN-72)
//	   ends its turn.
//
// A worker chat is read-only: a person's turn, pending message or resume
// there is refused; a stop and an answer to its tool call go back through
// the session to the root chat, which hands them to the backend that runs
// the worker.

// WorkerLink is what a worker chat knows of the worker it serves.
type WorkerLink struct {
	// Root is the chat whose backend conversation runs the worker.
	Root string
	// ToolCallID is the spawning call, the worker's name in the backend.
	ToolCallID string
}

// WorkerOpen is a root chat's request to its session to open a worker
// chat.
type WorkerOpen struct {
	URI string
	// Root is the chat whose conversation runs the worker; Parent is the
	// chat its spawning call is in (the root, or the worker chat that
	// spawned a nested worker, C-SUB-18).
	Root, Parent string
	ToolCallID   string
	Title        string
	Prompt       string
}

// workers is a chat's share of the worker bookkeeping: in a root chat the
// book of the workers its conversation spawned and the relays to their
// chats, in a worker chat its running turn. It is part of the chat actor
// and runs only on the actor's goroutine.
type workers struct {
	c *Chat
	// spawned holds, in the root chat, every worker its conversation
	// spawned, by spawning call.
	spawned map[string]*spawnedWorker
	// here holds the subagent content of the spawning calls that are in
	// this chat, by call id: what the call's result names (C-SUB-17).
	here map[string]ahp.ToolResultContent
	// turnID is a worker chat's running turn while it streams.
	turnID string
	// direct holds the actors the session reached for this chat's relays,
	// by chat URI, and relaying counts this chat's relays to each URI not
	// yet acknowledged (Relayed). With none in flight, a relay goes
	// straight into the actor's mailbox: nothing sent earlier is still
	// queued in the session to overtake.
	direct   map[string]*Chat
	relaying map[string]int
}

type spawnedWorker struct {
	uri string
	// turnID is the root chat's turn the worker's events come under.
	turnID     string
	background bool
	ended      bool
}

// workerNamespace makes a worker's opaque URI from its root chat and its
// spawning call (C-SUB-03).
var workerNamespace = uuid.MustParse("6f1c2a4e-93b5-4f1e-8d0a-5b7c1e2d3f40")

// MintWorkerURI mints the URI of the worker a call spawned, in its
// session's format (C-SUB-02): VS Code's ahp-chat://subagent/... for a
// session whose default chat is VS Code's derived URI (C-SUB-04), and
// otherwise ahp-chat:/<uuid> made from the root chat and the call
// (C-SUB-03), the same on every run.
func MintWorkerURI(session, defaultChat, root, toolCallID string) string {
	if ahp.SpeaksDerivedURIs(defaultChat) {
		return ahp.SubagentChatURI(session, toolCallID)
	}
	return ahp.OpaqueChatURI(uuid.NewSHA1(workerNamespace, []byte(root+"\n"+toolCallID)).String())
}

// Post runs fn on the chat's actor. It never blocks; the session uses it to
// hand a chat what another chat relayed to it.
func (c *Chat) Post(fn func(*Chat)) error { return c.do(func() { fn(c) }) }

// route takes the events that are a worker's business: a spawn,
// a worker's end and everything a worker's conversation said. false: the
// event is the chat's own.
func (wk *workers) route(ev agent.Event) bool {
	c := wk.c
	switch {
	case ev.Kind == agent.EventWorkerStarted:
		wk.spawn(ev)
	case ev.Kind == agent.EventWorkerEnded:
		if ev.Spawn != nil {
			end := agent.End{Outcome: agent.OutcomeComplete}
			if ev.End != nil {
				end = *ev.End
			}
			wk.endWorker(ev.Spawn.ID, end)
		}
	case ev.Worker != "":
		w := wk.spawned[ev.Worker]
		if w == nil || w.ended {
			c.log.Debug("dropped event of an unknown or ended worker", "worker", ev.Worker, "kind", ev.Kind)
			return true
		}
		wk.relay(w.uri, func(wc *Chat) { wc.workers.event(ev) })
	default:
		return false
	}
	return true
}

// relay runs fn on chat uri's actor: straight into its mailbox when this
// chat knows the actor and no relay to it is still in the session's hands,
// else through the session, which opens the chat if needed.
func (wk *workers) relay(uri string, fn func(*Chat)) {
	c := wk.c
	// Another chat sees this one only as stored and told (durable.go).
	c.durable.flush()
	if a := wk.direct[uri]; a != nil && wk.relaying[uri] == 0 && !a.Ending() {
		if a.Post(fn) == nil {
			return
		}
		c.log.Debug("worker chat gone; relaying through the session", "to", uri)
		delete(wk.direct, uri)
	}
	if c.cfg.Relay == nil {
		c.log.Debug("no session to relay a worker's business to", "to", uri)
		return
	}
	if wk.relaying == nil {
		wk.relaying = make(map[string]int)
	}
	wk.relaying[uri]++
	c.cfg.Relay(c, uri, fn)
}

// Relayed tells the chat that the session ran one of its relays to uri on
// actor a (nil: it could not reach the chat). The session calls it after it
// posted that relay's fn, so once none is in flight a direct post comes
// after all of them.
func (c *Chat) Relayed(uri string, a *Chat) error {
	return c.do(func() { c.workers.relayed(uri, a) })
}

// relayed is Relayed on the actor.
func (wk *workers) relayed(uri string, a *Chat) {
	if wk.relaying[uri] > 0 {
		wk.relaying[uri]--
	}
	if a == nil {
		return
	}
	if wk.direct == nil {
		wk.direct = make(map[string]*Chat)
	}
	wk.direct[uri] = a
}

// spawn opens the worker chat of a spawning call (C-SUB-01, 07, 08,
// 16) and names it on the call (C-SUB-17).
func (wk *workers) spawn(ev agent.Event) {
	c := wk.c
	sp := ev.Spawn
	if sp == nil || sp.ID == "" || c.cfg.WorkerURI == nil {
		return
	}
	if wk.spawned == nil {
		wk.spawned = make(map[string]*spawnedWorker)
	}
	if _, dup := wk.spawned[sp.ID]; dup {
		return
	}
	parent := c.cfg.URI
	if ev.Worker != "" {
		outer := wk.spawned[ev.Worker]
		if outer == nil {
			c.log.Warn("worker spawned by an unknown worker", "worker", sp.ID, "in", ev.Worker)
			return
		}
		parent = outer.uri
	}
	uri := c.cfg.WorkerURI(sp.ID)
	wk.spawned[sp.ID] = &spawnedWorker{uri: uri, turnID: ev.TurnID, background: sp.Background}
	title := sp.Description
	if title == "" {
		title = sp.AgentName
	}
	if title == "" {
		title = "Subagent"
	}
	content := ahp.ToolResultContent{Type: ahp.ContentSubagent, Resource: uri, Title: title, AgentName: sp.AgentName, Description: sp.Description}
	if parent == c.cfg.URI {
		wk.noteSpawn(sp.ID, content)
	} else {
		wk.relay(parent, func(pc *Chat) { pc.workers.noteSpawn(sp.ID, content) })
	}
	if c.cfg.OpenWorker != nil {
		c.durable.flush()
		c.cfg.OpenWorker(WorkerOpen{URI: uri, Root: c.cfg.URI, Parent: parent, ToolCallID: sp.ID, Title: title, Prompt: sp.Prompt})
	}
}

func (wk *workers) noteSpawn(callID string, content ahp.ToolResultContent) {
	if wk.here == nil {
		wk.here = make(map[string]ahp.ToolResultContent)
	}
	wk.here[callID] = content
}

// spawnedContent is what a call's result says of the worker it spawned.
func (wk *workers) spawnedContent(callID string) []ahp.ToolResultContent {
	if w, ok := wk.here[callID]; ok {
		return []ahp.ToolResultContent{w}
	}
	return nil
}

// running reports whether a worker this chat's conversation spawned still
// runs.
func (wk *workers) running() bool {
	for _, w := range wk.spawned {
		if !w.ended {
			return true
		}
	}
	return false
}

// endWorker ends worker id's turn in its chat once.
func (wk *workers) endWorker(id string, end agent.End) {
	w := wk.spawned[id]
	if w == nil || w.ended {
		return
	}
	w.ended = true
	wk.relay(w.uri, func(wc *Chat) { wc.workers.end(end) })
}

// endWorkersOf ends the workers turnID spawned that still run, as the turn
// ended: a stop ends them with it (C-TURN-72); background workers run on
// (C-TURN-73).
func (wk *workers) endWorkersOf(turnID string, outcome agent.Outcome) {
	for id, w := range wk.spawned {
		if w.turnID == turnID && !w.background && !w.ended {
			wk.endWorker(id, agent.End{Outcome: outcome, Message: "The turn that spawned this worker ended."})
		}
	}
}

// begin opens a worker chat's turn with the prompt the parent agent
// wrote (C-SUB-08). Runs on the worker chat's actor.
func (wk *workers) begin(prompt string) {
	c := wk.c
	msg := ahp.Message{Text: prompt, Origin: ahp.MessageOrigin{Kind: ahp.MessageFromAgent}}
	if id := c.eng.Begin(workerConv{c}, agent.Capabilities{}, msg); id != "" {
		wk.turnID = id
	}
}

// workerConv is the conversation a worker chat's turn is handed to: the
// backend running the worker is the root chat's, so a stop or an answer
// said here goes there (C-SUB-12, 13); what the worker says arrives through
// the root chat (workers.event). Its methods run on the worker chat's actor.
type workerConv struct{ c *Chat }

func (w workerConv) Send(context.Context, agent.Turn) error {
	return errors.New("a worker chat's turns are its parent agent's")
}
func (w workerConv) Steer(agent.Steering) agent.SteerResult { return agent.SteerUnsupported }
func (w workerConv) Withdraw(string) bool                   { return false }
func (w workerConv) Confirm(_, toolCallID string, approved bool) error {
	w.c.workers.confirmed(toolCallID, approved)
	return nil
}
func (w workerConv) Stop(context.Context) error { w.c.workers.stopped(); return nil }
func (w workerConv) Events() <-chan agent.Event { return nil }
func (w workerConv) Close() error               { return nil }

// ClientToolResult hands a client's run of a tool the worker called to the
// backend that runs the worker, as an answer is (C-SUB-14).
func (w workerConv) ClientToolResult(_, toolCallID string, result agent.ClientToolResult) error {
	link := *w.c.cfg.Worker
	w.c.workers.relay(link.Root, func(rc *Chat) {
		rc.workers.onWorkerRunner(link.ToolCallID, func(r agent.ClientToolRunner, turnID string) error {
			return r.ClientToolResult(turnID, toolCallID, result)
		})
	})
	return nil
}

// ClientToolResultConfirmed hands the confirmation of that result the same
// way (C-SUB-14).
func (w workerConv) ClientToolResultConfirmed(_, toolCallID string, approved bool) error {
	link := *w.c.cfg.Worker
	w.c.workers.relay(link.Root, func(rc *Chat) {
		rc.workers.onWorkerRunner(link.ToolCallID, func(r agent.ClientToolRunner, turnID string) error {
			return r.ClientToolResultConfirmed(turnID, toolCallID, approved)
		})
	})
	return nil
}

// BeginWorker opens the worker chat's turn with the prompt the parent agent
// wrote; the session calls it once it announced the chat. Never blocks.
func (c *Chat) BeginWorker(prompt string) error { return c.do(func() { c.workers.begin(prompt) }) }

// event applies one event of the worker's conversation to the worker
// chat's running turn. Runs on the worker chat's actor.
func (wk *workers) event(ev agent.Event) {
	c := wk.c
	if wk.turnID == "" {
		c.log.Debug("dropped event of an ended worker turn", "kind", ev.Kind)
		return
	}
	switch ev.Kind {
	case agent.EventTurnEnd, agent.EventSteeringConsumed, agent.EventSteeringReturned, agent.EventTurnStarted, agent.EventExited:
		// The worker's own end comes as workers.end; the rest is its
		// backend's business.
		return
	}
	ev.TurnID = wk.turnID
	c.eng.Event(workerConv{c}, ev)
}

// end ends the worker chat's running turn. Runs on its actor.
func (wk *workers) end(end agent.End) {
	c := wk.c
	id := wk.turnID
	if id == "" {
		return
	}
	end.Resumable = false
	wk.turnID = ""
	c.eng.Event(workerConv{c}, agent.Event{Kind: agent.EventTurnEnd, TurnID: id, End: &end})
}

// stopped hands a stop said in a worker chat to the backend that
// runs the worker, through its root chat (C-SUB-13).
func (wk *workers) stopped() {
	c := wk.c
	link := *c.cfg.Worker
	wk.turnID = ""
	wk.relay(link.Root, func(rc *Chat) { rc.workers.stopWorker(link.ToolCallID) })
}

// stopWorker stops one worker of this root chat's conversation: alone when
// the backend can (agent.WorkerStopper), else with the turn it runs in.
func (wk *workers) stopWorker(id string) {
	c := wk.c
	w := wk.spawned[id]
	if w == nil || c.backends.conv == nil {
		return
	}
	if ws, ok := c.backends.conv.(agent.WorkerStopper); ok {
		if err := ws.StopWorker(context.Background(), id); err != nil {
			c.log.Warn("stop worker", "worker", id, "err", err)
		}
		return
	}
	if t := c.eng.Active(); t != nil && t.ID == w.turnID {
		c.eng.Stop(nil, ahp.ChatTurnCancelled{TurnID: t.ID})
	}
}

// confirmed hands the answer to a worker's tool call to the backend
// that runs the worker (C-SUB-12).
func (wk *workers) confirmed(toolCallID string, approved bool) {
	c := wk.c
	link := *c.cfg.Worker
	wk.relay(link.Root, func(rc *Chat) { rc.workers.confirmWorkerTool(link.ToolCallID, toolCallID, approved) })
}

// onWorkerRunner runs fn on this chat's conversation for a client's run of
// a tool worker called, with the host turn the worker belongs to.
func (wk *workers) onWorkerRunner(worker string, fn func(agent.ClientToolRunner, string) error) {
	c := wk.c
	w := wk.spawned[worker]
	if w == nil || c.backends.conv == nil {
		return
	}
	r, ok := c.backends.conv.(agent.ClientToolRunner)
	if !ok {
		return
	}
	if err := fn(r, w.turnID); err != nil {
		c.log.Warn("hand a client's run of a worker's tool", "worker", worker, "err", err)
	}
}

func (wk *workers) confirmWorkerTool(worker, toolCallID string, approved bool) {
	c := wk.c
	w := wk.spawned[worker]
	if w == nil || c.backends.conv == nil {
		return
	}
	if err := c.backends.conv.Confirm(w.turnID, toolCallID, approved); err != nil {
		c.log.Warn("confirm worker's tool call", "worker", worker, "tool", toolCallID, "err", err)
	}
}
