package cofold

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Bounds of what a conversation holds for the chat actor.
const (
	// eventCap bounds the events waiting for the chat actor; the run
	// waits while it is full (the model stream is read no further).
	eventCap = 256
	// maxSteering bounds the steering messages a run holds.
	maxSteering = 8
)

// conversation is one chat's cofold conversation. One goroutine (loop)
// runs its turns one after another and is the only one that touches
// msgs and tools; the chat actor's calls only hand it work under mu.
type conversation struct {
	a     *Agent
	store Store
	id    string
	dirs  []string
	model string
	// mode is the session's permission mode.
	mode string
	// hostTools is where the host serves its tools to this conversation.
	hostTools *agent.HostTools
	log       *slog.Logger

	events chan agent.Event
	// done is closed by Close; a run waiting to push an event gives up.
	done chan struct{}
	// loops counts loop goroutines, so events is closed after the last.
	loops sync.WaitGroup

	// Owned by the loop goroutine.
	tools  *tools
	msgs   []Message
	loaded bool

	// mu guards running, held and closed.
	mu      sync.Mutex
	running *run
	held    agentproc.HeldTurns
	closed  bool
}

// run is the turn the loop runs.
type run struct {
	turn   agent.Turn
	ctx    context.Context
	cancel context.CancelFunc
	// Guarded by the conversation's mu.
	stopped bool
	// steer are steering messages handed to the run, not yet written.
	steer []agent.Steering
	// asks are the tool calls waiting for Confirm, by call id.
	asks map[string]chan bool
	// dropped are the turns sent behind this one that a stop ended.
	dropped []agent.Turn
}

func newConversation(a *Agent, st Store, fs workdirs, p agent.OpenParams) *conversation {
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &conversation{
		a:         a,
		store:     st,
		id:        p.ConversationID,
		dirs:      append([]string(nil), p.Directories...),
		model:     p.Model,
		mode:      a.modeOf(p.Config),
		hostTools: p.HostTools,
		log:       log.With("agent", Provider, "conversation", p.ConversationID),
		events:    make(chan agent.Event, eventCap),
		done:      make(chan struct{}),
		tools:     &tools{fs: fs, bashTimeout: a.settings.bashTimeout(), reads: map[string][]byte{}, sandbox: agentproc.ToCmd(p.Sandbox)},
	}
}

func newRun(t agent.Turn) *run {
	ctx, cancel := context.WithCancel(context.Background())
	return &run{turn: t, ctx: ctx, cancel: cancel, asks: map[string]chan bool{}}
}

// Events is the stream of what happened.
func (c *conversation) Events() <-chan agent.Event { return c.events }

// Send runs the turn, or holds it while another runs (C-TURN-103, 104).
func (c *conversation) Send(ctx context.Context, t agent.Turn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if runNow, err := c.held.Admit(ctx, t, c.closed, c.running != nil); !runNow {
		return err
	}
	r := newRun(t)
	c.running = r
	c.loops.Add(1)
	go c.loop(r)
	return nil
}

// loop runs r, then each turn held behind it.
func (c *conversation) loop(r *run) {
	defer c.loops.Done()
	for {
		end := c.runTurn(r)
		r.cancel()
		c.mu.Lock()
		c.settle(r)
		returned := r.steer
		r.steer = nil
		c.mu.Unlock()
		// A run that settles before a step read a steering message gives
		// it back (C-TURN-91); a failed turn takes it with it (C-TURN-67).
		if end.Outcome != agent.OutcomeError {
			for _, s := range returned {
				c.push(agent.Event{Kind: agent.EventSteeringReturned, TurnID: r.turn.ID, SteeringID: s.ID})
			}
		}
		c.push(agent.Event{Kind: agent.EventTurnEnd, TurnID: r.turn.ID, End: &end})
		// Until running changes here, a stop still names r: what it ended
		// behind r is read in the same critical section.
		c.mu.Lock()
		dropped := r.dropped
		var next *run
		if t, ok := c.held.Next(); ok && !c.closed {
			next = newRun(t)
		}
		c.running = next
		c.mu.Unlock()
		for _, t := range dropped {
			c.push(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeCancelled}})
		}
		if next == nil {
			return
		}
		r = next
	}
}

// settle answers every ask of r left waiting (denied). Called with mu.
func (c *conversation) settle(r *run) {
	for id, ch := range r.asks {
		delete(r.asks, id)
		select {
		case ch <- false:
		default:
		}
	}
}

// push hands ev to the chat actor, waiting while the queue is full; after
// Close it is dropped (nobody reads any more).
func (c *conversation) push(ev agent.Event) {
	select {
	case c.events <- ev:
	case <-c.done:
	}
}

// Steer hands a steering message to the running turn; the run writes it
// into the transcript before the model's next step (C-TURN-87).
func (c *conversation) Steer(s agent.Steering) agent.SteerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.running
	if r == nil || r.turn.ID != s.TurnID || r.stopped {
		return agent.SteerNotYet
	}
	if len(r.steer) >= maxSteering {
		return agent.SteerRefused
	}
	r.steer = append(r.steer, s)
	return agent.SteerTaken
}

// Withdraw keeps the message: the run's submit takes no steer back, so a
// message the run holds is still read (C-TURN-93); the host says the
// removal all the same (C-TURN-92).
func (c *conversation) Withdraw(string) bool { return false }

// takeSteering hands the run the steering messages it holds, emptying it.
func (c *conversation) takeSteering(r *run) []agent.Steering {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := r.steer
	r.steer = nil
	return out
}

// Confirm answers a tool call waiting for confirmation.
func (c *conversation) Confirm(turnID, toolCallID string, approved bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.running
	if r == nil || r.turn.ID != turnID {
		return fmt.Errorf("confirm %s: turn %s is not running", toolCallID, turnID)
	}
	ch, ok := r.asks[toolCallID]
	if !ok {
		return fmt.Errorf("confirm %s: no such call waits", toolCallID)
	}
	delete(r.asks, toolCallID)
	ch <- approved
	return nil
}

// ask registers a call waiting for Confirm; the channel gets the answer.
func (c *conversation) ask(r *run, callID string) chan bool {
	ch := make(chan bool, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.stopped {
		ch <- false
		return ch
	}
	r.asks[callID] = ch
	return ch
}

// Stop cancels the running turn's model request and tool (a bash call's
// whole process group) and ends every turn sent behind it, cancelled.
func (c *conversation) Stop(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.running
	if r == nil {
		return nil
	}
	r.stopped = true
	r.dropped = append(r.dropped, c.held.Drop()...)
	c.settle(r)
	r.cancel()
	return nil
}

func (c *conversation) isStopped(r *run) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return r.stopped || c.closed
}

// Close stops what runs; the stored conversation stays. Events is closed
// once the loop has returned.
func (c *conversation) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if r := c.running; r != nil {
		r.stopped = true
		c.settle(r)
		r.cancel()
	}
	c.held.Drop()
	c.mu.Unlock()
	close(c.done)
	go func() {
		c.loops.Wait()
		close(c.events)
	}()
	return nil
}

// Kill is Close: nothing outside the daemon's process runs but a bash
// call, which the stop kills with its process group.
func (c *conversation) Kill() error { return c.Close() }
