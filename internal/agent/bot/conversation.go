package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

const (
	// eventBuffer is how many events wait for the chat actor.
	eventBuffer = 256
	// commandBuffer bounds what the chat actor hands the loop at once.
	commandBuffer = 256
	// seenBuffer bounds the work chat's envelopes waiting for the loop;
	// one more ends the turn (the watch cannot block the bus).
	seenBuffer = 4096
	// hostWait bounds one call into the host.
	hostWait = 30 * time.Second
)

// HandOffMetaKey marks, in _meta, a steering message a bot's chat sent to
// its work session's queue, with the bot chat's conversation id: one left
// there by a turn that ended without it (a restart) is taken back before
// the chat's next turn, so the work session never runs it on its own.
const HandOffMetaKey = "ahpd.botHandOff"

// conversation is one bot chat's conversation. Its loop goroutine owns
// everything below mu-free fields; the chat actor's calls only push
// commands, so none of them blocks.
type conversation struct {
	st   *store.Store
	host Host
	// id is the bot chat's conversation id (OpenParams.ConversationID).
	id    string
	slug  string
	owner string // the bot chat's session owner
	log   *slog.Logger

	// ctx bounds every call into the host; Close cancels it, so a
	// conversation closing never waits out a slow host call.
	ctx    context.Context
	cancel context.CancelFunc

	events chan agent.Event
	cmds   chan func()
	seen   chan json.RawMessage
	// overflow is set when the work chat said more than seenBuffer
	// before the loop read it.
	overflow  atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	loopDone  chan struct{}
	// accepting: a work turn of the open bot turn runs, so a steering
	// message can go behind it (Steer reads it on the chat actor).
	accepting atomic.Bool

	// beforeHandOff is Options.BeforeHandOff.
	beforeHandOff func(steeringID string)

	// Owned by the loop.
	turn  *run
	queue []agent.Turn
}

// run is one bot turn and the work chat turns it owns.
type run struct {
	id    string // the bot chat's turn
	watch Watch
	// expect is the work turn the bot's turn was sent as; started once
	// the work chat said it.
	expect  string
	started bool
	// current is the work turn of this bot turn running now ("" between
	// them); ours are all of them, by id.
	current string
	ours    map[string]bool
	// handoffs are the steering messages sent to the work chat's queue
	// and not yet taken up, by id; placed once the work chat said them.
	handoffs map[string]*handoff
	// byKind maps the work chat's part ids to the bot turn's, per work turn.
	stopping bool
	// stopped: the work chat's actor ended with the daemon; nothing more
	// comes from it.
	stopped bool
	start   time.Time
}

type handoff struct {
	text   string
	seq    int64
	placed bool
}

func newConversation(st *store.Store, h Host, slug, owner string, log *slog.Logger, beforeHandOff func(string)) *conversation {
	c := &conversation{
		st: st, host: h, slug: slug, owner: owner, log: log, beforeHandOff: beforeHandOff,
		events:   make(chan agent.Event, eventBuffer),
		cmds:     make(chan func(), commandBuffer),
		seen:     make(chan json.RawMessage, seenBuffer),
		done:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.loop()
	return c
}

// push hands fn to the loop without blocking.
func (c *conversation) push(fn func()) error {
	select {
	case <-c.done:
		return errors.New("bot conversation closed")
	default:
	}
	select {
	case c.cmds <- fn:
		return nil
	default:
		return errors.New("bot conversation busy: too many requests waiting")
	}
}

func (c *conversation) Send(_ context.Context, t agent.Turn) error {
	return c.push(func() { c.send(t) })
}

// Steer: a steering message goes to the work session once a work turn of
// the bot's turn runs; until then the host hands it again (C-TURN-42).
func (c *conversation) Steer(s agent.Steering) agent.SteerResult {
	if !c.accepting.Load() {
		return agent.SteerNotYet
	}
	if err := c.push(func() { c.steer(s) }); err != nil {
		c.log.Warn("steering message could not be sent to the work session", "steering", s.ID, "err", err)
		return agent.SteerRefused // C-TURN-99
	}
	return agent.SteerTaken
}

// Withdraw: the work session's queue is its own; a message sent there stays.
func (c *conversation) Withdraw(string) bool { return false }

func (c *conversation) Confirm(turnID, toolCallID string, approved bool) error {
	return c.push(func() { c.confirm(turnID, toolCallID, approved) })
}

func (c *conversation) Stop(context.Context) error { return c.push(c.stop) }

func (c *conversation) Events() <-chan agent.Event { return c.events }

func (c *conversation) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.cancel()
	})
	<-c.loopDone
	return nil
}

// deliver is the watch's see: never blocks.
func (c *conversation) deliver(env json.RawMessage) {
	select {
	case c.seen <- env:
	default:
		c.overflow.Store(true)
	}
}

func (c *conversation) loop() {
	defer close(c.loopDone)
	defer close(c.events)
	defer func() {
		if c.turn != nil {
			c.turn.watch.Stop()
		}
	}()
	for {
		var workDone <-chan struct{}
		if c.turn != nil && !c.turn.stopped {
			workDone = c.turn.watch.Done()
		}
		// What the work chat said goes first: a command then acts on the
		// turn as it stands (a steering message whose turn ended comes
		// back, C-TURN-98).
		select {
		case env := <-c.seen:
			c.onSeen(env)
			continue
		default:
		}
		select {
		case <-c.done:
			return
		case fn := <-c.cmds:
			fn()
		case env := <-c.seen:
			c.onSeen(env)
		case <-workDone:
			if !c.turn.watch.Disposed() {
				// The daemon is stopping: the turn stays as it is.
				c.turn.stopped = true
				continue
			}
			c.finish(agent.End{Outcome: agent.OutcomeError, ErrorType: "workSessionGone", Message: "The bot's work session closed while its turn ran."})
		}
		if c.overflow.Load() && c.turn != nil {
			c.overflow.Store(false)
			c.finish(agent.End{Outcome: agent.OutcomeError, ErrorType: "workSessionOverrun", Message: "The work session said more than the bot's chat could follow."})
		}
	}
}

// drainSeen takes what the work chat said so far.
func (c *conversation) drainSeen() {
	for {
		select {
		case env := <-c.seen:
			c.onSeen(env)
		default:
			return
		}
	}
}

// emit hands the chat actor an event; Close releases a blocked send.
func (c *conversation) emit(ev agent.Event) {
	select {
	case c.events <- ev:
	case <-c.done:
	}
}

func (c *conversation) fail(turnID, errorType, format string, args ...any) {
	c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: turnID, End: &agent.End{Outcome: agent.OutcomeError, ErrorType: errorType, Message: fmt.Sprintf(format, args...)}})
}

// send starts a bot turn: the bot is looked up (it may have been deleted),
// the chat's right to it checked, its work session made if it has none,
// watched, and handed the turn as the bot's owner.
func (c *conversation) send(t agent.Turn) {
	if c.turn != nil {
		// One turn at a time (C-TURN-103): held until the open one ends.
		c.queue = append(c.queue, t)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, hostWait)
	defer cancel()
	b, ok, err := c.st.Bots().Get(ctx, c.slug)
	switch {
	case err != nil:
		c.fail(t.ID, "botUnavailable", "Reading bot %s: %v", c.slug, err)
		return
	case !ok:
		c.fail(t.ID, "botNotFound", "There is no bot %q (it may have been deleted).", c.slug)
		return
	case !MayUse(c.owner, b):
		// The work session is its owner's: nobody else reads it through
		// this chat.
		c.fail(t.ID, "permissionDenied", "Bot %q belongs to %s; this chat's session is %s's.", c.slug, b.Owner, c.owner)
		return
	}
	chat, err := c.host.WorkChat(ctx, b)
	if err != nil {
		c.fail(t.ID, "workSessionUnavailable", "Bot %q has no work session: %v", c.slug, err)
		return
	}
	w, err := c.host.Watch(ctx, b.Owner, chat, c.deliver)
	if err != nil {
		c.fail(t.ID, "workSessionUnavailable", "Following bot %q's work session: %v", c.slug, err)
		return
	}
	c.takeBackStale(ctx, w)
	r := &run{id: t.ID, watch: w, expect: uuid.NewString(), ours: map[string]bool{}, handoffs: map[string]*handoff{}, start: time.Now()}
	r.ours[r.expect] = true
	c.turn = r
	text := t.Text
	if t.HostContext != "" {
		// What the host has to say goes ahead of what was said (C-TURN-111).
		text = t.HostContext + "\n\n" + text
	}
	msg := ahp.Message{Text: text, Origin: ahp.MessageOrigin{Kind: "user"}, Attachments: workAttachments(t.Attachments)}
	start := ahp.ChatTurnStarted{TurnID: r.expect, StartedAt: isoNow(), Message: msg}
	if _, err := w.Dispatch(ctx, start); err != nil {
		c.finish(agent.End{Outcome: agent.OutcomeError, ErrorType: "workSessionUnavailable", Message: fmt.Sprintf("Handing the turn to bot %q's work session: %v", c.slug, err)})
	}
}

// takeBackStale takes out of the work chat's queue the messages this chat
// handed to a turn that is over: no turn of this chat runs now.
func (c *conversation) takeBackStale(ctx context.Context, w Watch) {
	if c.id == "" {
		return
	}
	for _, q := range w.Queued() {
		if q.Message.Meta[HandOffMetaKey] != c.id {
			continue
		}
		c.log.Info("taking back a steering message a past turn left in the work session", "steering", q.ID)
		if _, err := w.Dispatch(ctx, ahp.ChatPendingMessageRemoved{Kind: ahp.PendingQueued, ID: q.ID}); err != nil {
			c.log.Warn("take back a stale steering message", "steering", q.ID, "err", err)
		}
	}
}

// steer sends a steering message to the work session as a message queued
// behind its running turn (C-TURN-94). One whose bot turn ended on its way
// goes back to the host (C-TURN-98).
func (c *conversation) steer(s agent.Steering) {
	if c.beforeHandOff != nil {
		c.beforeHandOff(s.ID)
		c.drainSeen()
	}
	r := c.turn
	if r == nil || r.id != s.TurnID {
		c.emit(agent.Event{Kind: agent.EventSteeringReturned, TurnID: s.TurnID, SteeringID: s.ID})
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, hostWait)
	defer cancel()
	msg := ahp.Message{Text: s.Text, Origin: ahp.MessageOrigin{Kind: "user"}}
	if c.id != "" {
		msg.Meta = map[string]any{HandOffMetaKey: c.id}
	}
	set := ahp.ChatPendingMessageSet{Kind: ahp.PendingQueued, ID: s.ID, Message: msg}
	seq, err := r.watch.Dispatch(ctx, set)
	if err != nil {
		// C-TURN-99: taken out, the reason logged, the turn goes on.
		c.log.Warn("steering message could not be sent to the work session; taken out", "steering", s.ID, "err", err)
		c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.id, SteeringID: s.ID})
		return
	}
	r.handoffs[s.ID] = &handoff{text: s.Text, seq: seq}
}

func (c *conversation) confirm(turnID, toolCallID string, approved bool) {
	r := c.turn
	if r == nil || r.id != turnID || r.current == "" {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, hostWait)
	defer cancel()
	if _, err := r.watch.Dispatch(ctx, ahp.ChatToolCallConfirmed{TurnID: r.current, ToolCallID: toolCallID, Approved: approved}); err != nil {
		c.log.Warn("hand a confirmation to the work session", "tool", toolCallID, "err", err)
	}
}

// stop stops the work session's turn; what was sent behind it for this
// turn is taken back first, so the stop runs none of it.
func (c *conversation) stop() {
	c.queue = nil
	r := c.turn
	if r == nil {
		return
	}
	r.stopping = true
	ctx, cancel := context.WithTimeout(c.ctx, hostWait)
	defer cancel()
	c.withdrawHandoffs(ctx, r)
	target := r.current
	if target == "" && !r.started {
		target = r.expect
	}
	if target == "" {
		c.finish(agent.End{Outcome: agent.OutcomeCancelled})
		return
	}
	if _, err := r.watch.Dispatch(ctx, ahp.ChatTurnCancelled{TurnID: target}); err != nil {
		c.log.Warn("stop the work session's turn", "turn", target, "err", err)
		c.finish(agent.End{Outcome: agent.OutcomeCancelled})
	}
}

// withdrawHandoffs takes the turn's messages back out of the work chat's
// queue, so the work session never runs them on its own.
func (c *conversation) withdrawHandoffs(ctx context.Context, r *run) {
	for id := range r.handoffs {
		if _, err := r.watch.Dispatch(ctx, ahp.ChatPendingMessageRemoved{Kind: ahp.PendingQueued, ID: id}); err != nil {
			c.log.Warn("take a steering message back out of the work session", "steering", id, "err", err)
		}
	}
}

// finish ends the open bot turn. The steering messages the work session
// never took up are taken out of its queue and then out of the bot's chat
// (C-TURN-100).
func (c *conversation) finish(end agent.End) {
	r := c.turn
	if r == nil {
		return
	}
	c.turn = nil
	c.accepting.Store(false)
	if len(r.handoffs) > 0 && !r.stopping {
		ctx, cancel := context.WithTimeout(c.ctx, hostWait)
		c.withdrawHandoffs(ctx, r)
		cancel()
	}
	r.watch.Stop()
	c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: r.id, End: &end})
	for id := range r.handoffs {
		c.log.Info("steering message the work session never took up; taken out at the turn's end", "steering", id)
		c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.id, SteeringID: id})
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		c.send(next)
	}
}

// onSeen takes one envelope of the work chat.
func (c *conversation) onSeen(raw json.RawMessage) {
	r := c.turn
	if r == nil {
		return
	}
	var env ahp.ActionEnvelope
	if err := json.Unmarshal(raw, &env); err != nil {
		c.log.Debug("unreadable envelope of the work chat", "err", err)
		return
	}
	mine := env.Origin != nil && env.Origin.ClientID == r.watch.ClientID()
	if env.RejectionReason != "" {
		if mine {
			c.refused(r, env.Action, env.RejectionReason)
		}
		return
	}
	switch a := env.Action.(type) {
	case ahp.ChatTurnStarted:
		c.workTurnStarted(r, a)
	case ahp.ChatPendingMessageSet:
		if h := r.handoffs[a.ID]; h != nil && a.Kind == ahp.PendingQueued {
			// C-TURN-96: on its way into the open turn.
			h.placed = true
		}
	case ahp.ChatPendingMessageRemoved:
		if h := r.handoffs[a.ID]; h != nil && a.Kind == ahp.PendingQueued && !mine {
			// Somebody took it out of the work session: it will not run.
			delete(r.handoffs, a.ID)
			c.log.Info("steering message taken out of the work session by another client", "steering", a.ID)
			c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.id, SteeringID: a.ID})
			c.maybeDone(r, agent.End{Outcome: agent.OutcomeComplete})
		}
	case ahp.ChatTurnComplete:
		c.workTurnEnded(r, a.TurnID, agent.End{Outcome: agent.OutcomeComplete})
	case ahp.ChatTurnCancelled:
		c.workTurnEnded(r, a.TurnID, agent.End{Outcome: agent.OutcomeCancelled})
	case ahp.ChatError:
		end := agent.End{Outcome: agent.OutcomeError, ErrorType: "workSessionError", Message: "The work session's turn failed."}
		if a.Part.Error != nil {
			end.Message = a.Part.Error.Message
			if a.Part.Error.ErrorType != "" {
				end.ErrorType = a.Part.Error.ErrorType
			}
		}
		c.workTurnEnded(r, a.TurnID, end)
	default:
		if r.current != "" {
			c.relay(r, env.Action)
		}
	}
}

// workTurnStarted: the bot's own work turn, or a work turn that took up one
// of its steering messages, which then answers in the bot's turn (C-TURN-97).
func (c *conversation) workTurnStarted(r *run, a ahp.ChatTurnStarted) {
	switch {
	case a.TurnID == r.expect:
		r.started = true
		r.current = a.TurnID
	case a.QueuedMessageID != "" && r.handoffs[a.QueuedMessageID] != nil:
		h := r.handoffs[a.QueuedMessageID]
		delete(r.handoffs, a.QueuedMessageID)
		r.ours[a.TurnID] = true
		r.current = a.TurnID
		// C-TURN-101: the chat's log holds the message against the turn
		// it went into.
		c.emit(agent.Event{Kind: agent.EventNotice, TurnID: r.id, Text: "Steering: " + h.text})
		c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.id, SteeringID: a.QueuedMessageID})
	default:
		return
	}
	c.accepting.Store(!r.stopping)
}

// workTurnEnded: the bot's turn ends with its last work turn, once no
// steering message it sent waits in the work chat's queue. A stop or a
// failure there ends it at once: the work chat starts nothing behind those.
func (c *conversation) workTurnEnded(r *run, turnID string, end agent.End) {
	if !r.ours[turnID] {
		return
	}
	delete(r.ours, turnID)
	if r.current == turnID {
		r.current = ""
		c.accepting.Store(false)
	}
	if end.Outcome != agent.OutcomeComplete || r.stopping {
		if r.stopping {
			end = agent.End{Outcome: agent.OutcomeCancelled}
		}
		c.finish(end)
		return
	}
	c.maybeDone(r, end)
}

func (c *conversation) maybeDone(r *run, end agent.End) {
	if r.current == "" && r.started && len(r.handoffs) == 0 && c.turn == r {
		c.finish(end)
	}
}

// refused: the work chat refused one of this conversation's actions.
func (c *conversation) refused(r *run, a ahp.Action, reason string) {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		if a.TurnID == r.expect {
			c.finish(agent.End{Outcome: agent.OutcomeError, ErrorType: "workSessionRefused", Message: "The work session refused the turn: " + reason})
		}
	case ahp.ChatPendingMessageSet:
		if r.handoffs[a.ID] != nil {
			// C-TURN-99: taken out, with the reason in the log; the turn
			// goes on.
			delete(r.handoffs, a.ID)
			c.log.Warn("the work session refused a steering message; taken out", "steering", a.ID, "reason", reason)
			c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.id, SteeringID: a.ID})
			c.maybeDone(r, agent.End{Outcome: agent.OutcomeComplete})
		}
	case ahp.ChatTurnCancelled:
		c.log.Warn("the work session refused the stop", "reason", reason)
		c.finish(agent.End{Outcome: agent.OutcomeCancelled})
	default:
		c.log.Warn("the work session refused an action", "type", a.ActionType(), "reason", reason)
	}
}

// relay maps one action of the running work turn onto the bot turn.
func (c *conversation) relay(r *run, a ahp.Action) {
	ev := agent.Event{TurnID: r.id}
	pid := func(id string) string { return r.current + "/" + id }
	switch a := a.(type) {
	case ahp.ChatResponsePart:
		if a.TurnID != r.current {
			return
		}
		p := a.Part
		switch p.Kind {
		case ahp.PartMarkdown:
			ev.Kind, ev.PartID, ev.Text = agent.EventText, pid(p.ID), p.Content
		case ahp.PartReasoning:
			ev.Kind, ev.PartID, ev.Text = agent.EventReasoning, pid(p.ID), p.Content
		case ahp.PartSystemNotification:
			ev.Kind, ev.Text = agent.EventNotice, p.Content
		case ahp.PartToolCall:
			if p.ToolCall == nil {
				return
			}
			ev.Kind = agent.EventToolStart
			ev.ToolCall = &agent.ToolCall{ID: p.ToolCall.ToolCallID, Name: p.ToolCall.ToolName, DisplayName: p.ToolCall.DisplayName}
		default:
			return
		}
	case ahp.ChatDelta:
		if a.TurnID != r.current {
			return
		}
		ev.Kind, ev.PartID, ev.Text = agent.EventText, pid(a.PartID), a.Content
	case ahp.ChatReasoning:
		if a.TurnID != r.current {
			return
		}
		ev.Kind, ev.PartID, ev.Text = agent.EventReasoning, pid(a.PartID), a.Content
	case ahp.ChatToolCallStart:
		if a.TurnID != r.current {
			return
		}
		ev.Kind = agent.EventToolStart
		ev.ToolCall = &agent.ToolCall{ID: a.ToolCallID, Name: a.ToolName, DisplayName: a.DisplayName}
	case ahp.ChatToolCallDelta:
		if a.TurnID != r.current || a.Content == "" {
			return
		}
		ev.Kind, ev.Text = agent.EventToolInput, a.Content
		ev.ToolCall = &agent.ToolCall{ID: a.ToolCallID}
	case ahp.ChatToolCallReady:
		if a.TurnID != r.current {
			return
		}
		tc := &agent.ToolCall{ID: a.ToolCallID, Input: toolInput(a.ToolInput), NeedsConfirmation: a.Confirmed == ""}
		if a.InvocationMessage != nil {
			tc.Invocation = a.InvocationMessage.String()
		}
		ev.Kind, ev.ToolCall = agent.EventToolReady, tc
	case ahp.ChatToolCallComplete:
		if a.TurnID != r.current {
			return
		}
		tc := &agent.ToolCall{ID: a.ToolCallID, Success: a.Result.Success}
		if a.Result.PastTenseMessage != nil {
			tc.PastTense = a.Result.PastTenseMessage.String()
		}
		for _, rc := range a.Result.Content {
			tc.Output += rc.Text
		}
		if len(a.Result.Error) > 0 {
			var e struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(a.Result.Error, &e) == nil {
				tc.Error = e.Message
			}
		}
		ev.Kind, ev.ToolCall = agent.EventToolDone, tc
	case ahp.ChatUsage:
		if a.TurnID != r.current {
			return
		}
		ev.Kind = agent.EventUsage
		ev.Usage = &agent.Usage{InputTokens: int(a.Usage.InputTokens), OutputTokens: int(a.Usage.OutputTokens), Model: a.Usage.Model}
		if a.Usage.CacheReadTokens != nil {
			ev.Usage.CacheRead = int(*a.Usage.CacheReadTokens)
		}
	default:
		return
	}
	c.emit(ev)
}

func isoNow() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

// toolInput is a tool call's input as text: the JSON string's value, or
// the JSON itself when it is not a string.
func toolInput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
