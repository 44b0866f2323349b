package chat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/reduce"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

// Refusal texts CHATS.md quotes from VS Code's agent host.
const (
	ReasonNoSteering       = "The session provider does not support steering messages."
	ReasonSteeringBusy     = "Cannot change a steering message while it is being processed."
	reasonNoActiveTurn     = "No turn is running in this chat."
	reasonNotDispatchable  = "Action is not client-dispatchable."
	reasonReadOnly         = "This chat is read-only."
	reasonNotResumable     = "Only the latest turn, ended by a resumable error while nothing runs, can be resumed."
	commandPrefix          = "!"
	hostRestartedMessage   = "The host restarted while this turn was running."
	hostRestartedErrorType = "hostRestarted"
)

// runningTurn is the turn engine's record of the active turn.
type runningTurn struct {
	id      string
	started time.Time
	sender  string
	// sent: the prompt was handed to the backend (steering may be handed).
	// A turn admitted while the backend still ends the one in front of it
	// (a stopped turn) waits unsent (engineState.unsent) when the backend
	// does not say OneTurnAtATime.
	sent bool
	// conv is the conversation the turn was handed to (the chat's agent,
	// or its ! command shell), nil until then; caps are that backend's.
	conv agent.Conversation
	caps agent.Capabilities
	// Part bookkeeping: the open markdown and reasoning parts, so text
	// continues the part it belongs to and starts a new one after any
	// other part.
	mdPart, rsPart string
	lastKind       string
	nextPart       int
	tools          map[string]bool
}

// engineState is what the turn engine keeps beside ChatState. Owned by the
// chat actor's loop, like everything else of a Chat.
//
// Three holds keep what waits from starting on its own (startNext), each
// lifted by something else:
//
//	paused     the latest turn was stopped or failed; lifted when a client
//	           queues, takes back or reorders a message while nothing runs,
//	           or a turn completes (C-TURN-32..37)
//	resumable  the latest turn ended in an error a client can resume (read
//	           off ChatState); lifted when it is resumed and completes, or
//	           another turn completes (C-TURN-38, 39)
//	handed     the backend holds a steering message it was handed and has not
//	           run; lifted when it reports it consumed, handed back or run as
//	           a turn of its own (C-TURN-40)
//
// A client's chat/turnStarted is never held by them: one sent while nothing
// runs starts at once, and one sent behind a running turn starts when that
// turn ends, however it ended, unless a stop ended it (behind).
type engineState struct {
	// handed is the steering message the backend took (SteerTaken) and has
	// not reported consumed or returned; empty id when none. turnID is the
	// turn it was handed to; msg is the message as handed, kept after a
	// stop or a client took it out of the chat, so a turn the backend opens
	// for it still says it.
	handed handedSteering
	// paused: the latest turn was stopped or failed; nothing starts on its
	// own until a client queues, takes back or reorders a message while
	// nothing runs, or a turn completes.
	paused bool
	// behind holds, in order, the chat/turnStarted actions clients sent
	// while a turn was active. The reducer replaces the active turn on a
	// start of another id, so none is said before the turn in front of it
	// ends; then the head is said and runs, or, when a stop ended that
	// turn, each is said and ended cancelled, unrun (C-TURN-104..106).
	behind []heldStart
	// open lists the turns handed to the backend whose end it has not
	// reported yet, oldest first. A stopped turn stays open until the
	// backend says it ended.
	open []string
	// unsent is the running turn's prompt while it waits for the backend
	// to end the turn in front of it: a backend that does not say
	// OneTurnAtATime is never sent a turn while it runs another.
	unsent *agent.Turn
	// senders names who set each pending message, by id, so the turn a
	// pending message becomes names its sender (C-TURN-04).
	senders map[string]string
	// resolved holds the chat attachments the host resolved for each
	// pending message, by id, until it starts (C-ATT-23). Not kept across
	// a restart: a message read back gets the pointers without excerpts.
	resolved map[string][]attach.Resolved
}

type handedSteering struct {
	id     string
	turnID string
	msg    ahp.Message
}

// heldStart is a client's chat/turnStarted waiting behind the active turn,
// and the client's stop of it when one came while it waited.
type heldStart struct {
	cl     Client
	origin *ahp.ActionOrigin
	a      ahp.ChatTurnStarted
	stop   *heldStop
}

type heldStop struct {
	origin *ahp.ActionOrigin
	a      ahp.ChatTurnCancelled
}

func (c *Chat) onClientAction(cl Client, origin *ahp.ActionOrigin, a ahp.Action) {
	if !ahp.IsClientDispatchable(a.ActionType()) {
		c.refuse(cl, origin, a, reasonNotDispatchable)
		return
	}
	if grant := ahp.GrantFor(a.ActionType()); grant != "" && !cl.can(grant) {
		c.refuse(cl, origin, a, fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), grant))
		return
	}
	if text, ok := messageText(a); ok && isCommand(text) && !c.mayRunCommands(cl) {
		c.refuse(cl, origin, a, "Permission denied: a ! command runs a shell on the host, which only the session's owner or root may do.")
		return
	}
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		c.clientTurnStarted(cl, origin, a)
	case ahp.ChatTurnCancelled:
		c.clientStop(cl, origin, a)
	case ahp.ChatTurnResume:
		c.clientResume(cl, origin, a)
	case ahp.ChatPendingMessageSet:
		c.clientPendingSet(cl, origin, a)
	case ahp.ChatPendingMessageRemoved:
		c.clientPendingRemoved(cl, origin, a)
	case ahp.ChatQueuedMessagesReordered:
		c.apply(a, origin)
		c.kick() // C-TURN-36
	case ahp.ChatDraftChanged:
		c.apply(a, origin) // stored before it is said (durable.go)
	case ahp.ChatToolCallConfirmed:
		c.clientConfirm(cl, origin, a)
	case ahp.ChatIsReadChanged, ahp.ChatIsArchivedChanged:
		c.apply(a, origin)
	case ahp.ChatTruncated:
		c.clientTruncate(cl, origin, a) // truncate.go
	case ahp.ChatWorkingDirectorySet, ahp.ChatWorkingDirectoryRemoved:
		c.clientDirectories(cl, origin, a) // directories.go
	default:
		// Client tool results, input answers and the like change only the
		// chat's state.
		c.apply(a, origin)
	}
}

// messageText is the text of the message a client action would run.
func messageText(a ahp.Action) (string, bool) {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		return a.Message.Text, true
	case ahp.ChatPendingMessageSet:
		return a.Message.Text, true
	}
	return "", false
}

// mayRunCommands: a ! command is a shell on the host with the daemon's
// rights, so chat:send is not enough; only root or the session's owner.
func (c *Chat) mayRunCommands(cl Client) bool {
	return cl.Root || cl.Can == nil || (cl.Sender != "" && cl.Sender == c.cfg.Owner)
}

func (c *Chat) readOnly() bool { return c.state.Interactivity == "read-only" }

// running reports whether a turn is active.
func (c *Chat) running() bool { return c.turn != nil || c.state.ActiveTurn != nil }

// clientTurnStarted admits a client's turn, which the host says again to
// every watcher (C-TURN-01). One sent while a turn runs waits behind it and
// is said once that turn ends (C-TURN-104).
func (c *Chat) clientTurnStarted(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTurnStarted) {
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	if a.TurnID == "" {
		c.refuse(cl, origin, a, "chat/turnStarted needs a turnId.")
		return
	}
	if c.isKnownTurn(a.TurnID) {
		// Idempotent (AHP-1.0.md §5): said again, changes nothing, and the
		// backend is not started again.
		c.apply(a, origin)
		return
	}
	if c.running() || c.isBehind(a.TurnID) {
		c.engine().behind = append(c.engine().behind, heldStart{cl: cl, origin: origin, a: a})
		c.persistPending() // pending.go: turns sent behind survive a restart
		return
	}
	c.admit(a, origin, cl.Sender, cl.ChatAttachments)
}

// engine is the turn engine's own state (see engineState).
func (c *Chat) engine() *engineState { return &c.eng }

func (c *Chat) isKnownTurn(id string) bool {
	if c.state.ActiveTurn != nil && c.state.ActiveTurn.ID == id {
		return true
	}
	for i := range c.state.Turns {
		if c.state.Turns[i].ID == id {
			return true
		}
	}
	return false
}

func (c *Chat) isBehind(id string) bool {
	for _, h := range c.engine().behind {
		if h.a.TurnID == id {
			return true
		}
	}
	return false
}

// isCommand reports whether a message's text is a ! command.
func isCommand(text string) bool {
	return strings.HasPrefix(text, commandPrefix) && len(strings.TrimSpace(text)) > len(commandPrefix)
}

// withSender returns m with sender in its _meta (C-TURN-07).
func withSender(m ahp.Message, sender string) ahp.Message {
	if sender == "" {
		return m
	}
	meta := make(map[string]any, len(m.Meta)+1)
	for k, v := range m.Meta {
		meta[k] = v
	}
	meta[SenderMetaKey] = sender
	m.Meta = meta
	return m
}

// say says chat/turnStarted for a turn this host admits: the sender goes
// into the message's _meta, and the turn is recorded as running.
func (c *Chat) say(a ahp.ChatTurnStarted, origin *ahp.ActionOrigin, sender string) *runningTurn {
	if a.StartedAt == "" {
		a.StartedAt = isoTime(c.cfg.Now())
	}
	if sender == "" {
		sender, _ = a.Message.Meta[SenderMetaKey].(string)
	}
	a.Message = withSender(a.Message, sender)
	started, err := time.Parse(time.RFC3339Nano, a.StartedAt)
	if err != nil {
		started = c.cfg.Now()
	}
	// Who sent it and whether it is a command go into the running record
	// that apply commits before the turn is said.
	if sender != "" {
		c.senders[a.TurnID] = sender
	}
	if isCommand(a.Message.Text) {
		c.commands[a.TurnID] = true
	}
	c.apply(a, origin)
	t := &runningTurn{id: a.TurnID, started: started, sender: sender, tools: make(map[string]bool)}
	c.turn = t
	return t
}

// admit starts a turn: says chat/turnStarted (with the sender in the
// message's _meta), records it as running, and hands it to the backend or
// runs it as a local command (C-TURN-29..31).
//
// The message's inline bytes are written before the turn is said, and the
// turn carries their paths (C-ATT-07..10, attachments.go); a chat
// attachment whose pin nobody can honour ends the turn in a chat/error of
// errorType sendFailed before the backend is handed it (C-ATT-32, 33).
func (c *Chat) admit(a ahp.ChatTurnStarted, origin *ahp.ActionOrigin, sender string, resolved []attach.Resolved) {
	first := len(c.state.Turns) == 0
	msg, atts, pinErr := c.prepareMessage(a.Message, resolved)
	a.Message = msg
	t := c.say(a, origin, sender)
	text := a.Message.Text
	command := isCommand(text)
	c.autoTitle(text, first, command)
	if pinErr != nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: attach.SendFailed, Message: pinErr.Error()})
		return
	}
	if command {
		c.runCommand(t, strings.TrimSpace(strings.TrimPrefix(text, commandPrefix)))
		return
	}
	t.caps = c.caps
	turn := agent.Turn{ID: a.TurnID, Text: text, Model: modelOf(a.Message), Attachments: atts}
	// C-TURN-109: what the host has to say on this turn goes into its prompt.
	if meta := ParseRecordMeta(c.record.Meta); meta.FirstPromptContext != "" {
		turn.HostContext = meta.FirstPromptContext
		meta.FirstPromptContext = ""
		c.record.Meta = meta.Raw()
		c.persistRecord()
	}
	c.send(t, turn)
}

func modelOf(m ahp.Message) string {
	if m.Model != nil {
		return m.Model.ID
	}
	return ""
}

// send hands a turn to the backend, opening its conversation first. A
// backend that does not say OneTurnAtATime gets no turn while it still ends
// the one in front of it: the turn waits unsent until the backend reports
// that end (C-TURN-104).
func (c *Chat) send(t *runningTurn, turn agent.Turn) {
	e := c.engine()
	if err := c.ensureConversation(); err != nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "agentUnavailable", Message: err.Error()})
		return
	}
	if !c.caps.OneTurnAtATime && len(e.open) > 0 {
		e.unsent = &turn
		return
	}
	if err := c.conv.Send(context.Background(), turn); err != nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "sendFailed", Message: err.Error()})
		return
	}
	e.open = append(e.open, turn.ID)
	c.conversationUsed() // conversation.go
	t.sent = true
	t.conv, t.caps = c.conv, c.caps
	c.heardFromAgent() // the silence counts from the prompt (silence.go)
	// C-TURN-41: steering is handed at the turn's start.
	c.handSteering()
}

// on reports whether the turn belongs to conversation conv: handed to it,
// or not handed anywhere yet.
func (t *runningTurn) on(conv agent.Conversation) bool { return t.conv == nil || t.conv == conv }

// backendEnded notes that the backend ended turn id, and sends the running
// turn's prompt when it waited for that.
func (c *Chat) backendEnded(id string) {
	e := c.engine()
	if i := slices.Index(e.open, id); i >= 0 {
		e.open = slices.Delete(e.open, i, i+1)
	}
	t := c.turn
	if len(e.open) > 0 || e.unsent == nil || t == nil || t.id != e.unsent.ID || t.sent {
		return
	}
	turn := *e.unsent
	e.unsent = nil
	c.send(t, turn)
}

// conversationGone handles a backend process that ended: the running turn
// ends in an error, and the next turn reopens the conversation resumed. A
// turn that waited unsent for the old process goes to the new one.
func (c *Chat) conversationGone(err error) {
	e := c.engine()
	gone := c.conv
	if c.conv != nil {
		_ = c.conv.Close()
		c.conv = nil
	}
	e.handed = handedSteering{}
	e.open = nil
	t := c.turn
	if t == nil || !t.on(gone) {
		c.startNext()
		return
	}
	if e.unsent != nil && !t.sent {
		turn := *e.unsent
		e.unsent = nil
		c.send(t, turn)
		return
	}
	c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "agentExited", Message: err.Error()})
}

// endTurn ends the running turn with exactly one ending action
// (C-TURN-10..14), then starts what may start: a completed turn, and a !
// command's however it went, start what waits (C-TURN-26, 27); a failed
// one pauses it (C-TURN-33).
func (c *Chat) endTurn(end agent.End) {
	t := c.turn
	if t == nil {
		return
	}
	e := c.engine()
	c.turn = nil
	if e.unsent != nil && e.unsent.ID == t.id {
		e.unsent = nil
	}
	dur := max(0, c.cfg.Now().Sub(t.started).Milliseconds())
	if end.Point != "" {
		c.points[t.id] = end.Point // stored with the ending
	}
	switch end.Outcome {
	case agent.OutcomeComplete:
		c.apply(ahp.ChatTurnComplete{TurnID: t.id, Duration: dur}, nil)
	case agent.OutcomeCancelled:
		c.apply(ahp.ChatTurnCancelled{TurnID: t.id, Duration: dur}, nil)
	default:
		msg := end.Message
		if msg == "" {
			msg = "The turn failed."
		}
		info := ahp.ErrorInfo{ErrorType: end.ErrorType, Message: msg}
		if end.ExitCode != nil {
			info.Meta = map[string]any{"exitCode": *end.ExitCode}
		}
		// Only a backend that can resume fails a turn a client can resume.
		resumable := end.Resumable && t.caps.Resume
		c.apply(ahp.ChatError{TurnID: t.id, Duration: dur, Part: ahp.ErrorPart(info, resumable)}, nil)
	}
	c.endWorkersOf(t.id, end.Outcome)
	e.paused = end.Outcome != agent.OutcomeComplete && !t.caps.FailureGoesOn
	c.startNext()
}

// endTurnRecovered ends a turn left running by a process that died.
func (c *Chat) endTurnRecovered(r *store.TurnRecord) {
	if c.state.ActiveTurn == nil {
		return
	}
	started, err := time.Parse(time.RFC3339Nano, c.state.ActiveTurn.StartedAt)
	if err != nil {
		started = r.StartedAt
	}
	c.turn = &runningTurn{id: c.state.ActiveTurn.ID, started: started, sender: r.Sender}
	c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: hostRestartedErrorType, Message: hostRestartedMessage})
}

// clientStop handles chat/turnCancelled from a client: the stop is said,
// then every pending steering message is taken out (C-TURN-52, 53), then
// the turns sent behind the stopped one are said and ended unrun
// (C-TURN-105, 106), then the backend is told. A stop starts nothing
// (C-TURN-54).
func (c *Chat) clientStop(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTurnCancelled) {
	e := c.engine()
	t := c.turn
	if t == nil || a.TurnID != t.id {
		for i := range e.behind {
			if h := &e.behind[i]; h.a.TurnID == a.TurnID && h.stop == nil {
				// A turn waiting behind the running one: it is said and
				// ended, unrun, once the one in front of it ends.
				h.stop = &heldStop{origin: origin, a: a}
				return
			}
		}
		c.refuse(cl, origin, a, reasonNoActiveTurn)
		return
	}
	if a.Duration <= 0 {
		a.Duration = max(0, c.cfg.Now().Sub(t.started).Milliseconds())
	}
	c.turn = nil
	c.apply(a, origin)
	c.endWorkersOf(t.id, agent.OutcomeCancelled) // C-TURN-72
	if s := c.state.SteeringMessage; s != nil {
		c.apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: s.ID}, nil)
		delete(e.senders, s.ID)
	}
	behind := e.behind
	e.behind = nil
	for _, h := range behind {
		c.sayUnrun(h)
	}
	e.paused = true
	switch {
	case !t.sent:
		// Stopped before its prompt was sent: it ends unsent (C-TURN-108).
		e.unsent = nil
	case t.conv != nil:
		if err := t.conv.Stop(context.Background()); err != nil {
			c.log.Warn("stop turn", "turn", t.id, "err", err)
		}
	}
}

// sayUnrun says a turn sent behind a stopped one and ends it cancelled
// without running it.
// A client's stop of it while it waited is its ending, said as sent.
func (c *Chat) sayUnrun(h heldStart) {
	if c.isKnownTurn(h.a.TurnID) {
		// A repeated start: said again, changes nothing.
		c.apply(h.a, h.origin)
		return
	}
	// Never run, but said: its bytes are written as a run turn's are
	// (C-ATT-10).
	h.a.Message, _, _ = c.prepareMessage(h.a.Message, nil)
	t := c.say(h.a, h.origin, h.cl.Sender)
	c.turn = nil
	end, origin := ahp.ChatTurnCancelled{TurnID: t.id}, (*ahp.ActionOrigin)(nil)
	if h.stop != nil {
		end, origin = h.stop.a, h.stop.origin
		end.Duration = max(0, end.Duration)
	}
	c.apply(end, origin)
}

// clientResume reopens the latest turn when it failed resumably
// (AHP-1.0.md §3) and sends it again.
func (c *Chat) clientResume(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTurnResume) {
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	if c.turn != nil || reduce.CheckTurnResume(&c.state, a.TurnID) != nil {
		c.refuse(cl, origin, a, reasonNotResumable)
		return
	}
	last := c.state.Turns[len(c.state.Turns)-1]
	c.apply(a, origin)
	started, err := time.Parse(time.RFC3339Nano, last.StartedAt)
	if err != nil {
		started = c.cfg.Now()
	}
	t := &runningTurn{id: last.ID, started: started, sender: c.senders[last.ID], tools: make(map[string]bool)}
	c.turn = t
	c.persistRunning()
	_, atts, _ := c.prepareMessage(last.Message, nil)
	c.send(t, agent.Turn{ID: last.ID, Text: last.Message.Text, Model: modelOf(last.Message), Attachments: atts})
}

func resumable(t *ahp.Turn) bool {
	if t.State != ahp.TurnError || len(t.ResponseParts) == 0 {
		return false
	}
	return t.ResponseParts[len(t.ResponseParts)-1].IsResumableError()
}

// heldByResumableError: nothing starts while the latest turn ended in an
// error a client can resume (C-TURN-38).
func (c *Chat) heldByResumableError() bool {
	n := len(c.state.Turns)
	return n > 0 && resumable(&c.state.Turns[n-1])
}

// clientPendingSet queues or steers (C-TURN-20..23, 49..51).
func (c *Chat) clientPendingSet(cl Client, origin *ahp.ActionOrigin, a ahp.ChatPendingMessageSet) {
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	e := c.engine()
	switch a.Kind {
	case ahp.PendingQueued:
		c.notePendingSender(a.ID, cl.Sender) // stored with the message
		c.apply(a, origin)
		c.noteResolved(a.ID, cl.ChatAttachments)
		c.kick() // C-TURN-34
	case ahp.PendingSteering:
		if c.cfg.Agent != nil && !c.caps.Steering {
			// C-TURN-49: a turn running or not.
			c.refuse(cl, origin, a, ReasonNoSteering)
			return
		}
		if h := e.handed; h.id != "" {
			if h.id == a.ID {
				if !sameMessage(h.msg, a.Message) {
					c.refuse(cl, origin, a, ReasonSteeringBusy) // C-TURN-51
					return
				}
				// C-TURN-50: answered, and not handed twice.
				c.apply(a, origin)
				return
			}
			if s := c.state.SteeringMessage; s != nil && s.ID == h.id {
				// Another message would replace the one being processed.
				c.refuse(cl, origin, a, ReasonSteeringBusy)
				return
			}
		}
		c.notePendingSender(a.ID, cl.Sender) // stored with the message
		c.apply(a, origin)
		c.noteResolved(a.ID, cl.ChatAttachments)
		if c.running() {
			c.handSteering()
		} else {
			c.kick()
		}
	default:
		c.refuse(cl, origin, a, fmt.Sprintf("Unknown pending message kind %q.", a.Kind))
	}
}

func (c *Chat) notePendingSender(id, sender string) {
	e := c.engine()
	if sender == "" {
		return
	}
	if e.senders == nil {
		e.senders = make(map[string]string)
	}
	e.senders[id] = sender
}

// noteResolved keeps the chat attachments the host resolved for pending
// message id until it starts.
func (c *Chat) noteResolved(id string, resolved []attach.Resolved) {
	e := c.engine()
	if len(resolved) == 0 {
		delete(e.resolved, id)
		return
	}
	if e.resolved == nil {
		e.resolved = make(map[string][]attach.Resolved)
	}
	e.resolved[id] = resolved
}

func sameMessage(a, b ahp.Message) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// clientPendingRemoved takes a pending message back, said as the client
// sent it, one the chat no longer holds included (C-TURN-55..59).
func (c *Chat) clientPendingRemoved(cl Client, origin *ahp.ActionOrigin, a ahp.ChatPendingMessageRemoved) {
	e := c.engine()
	if a.Kind == ahp.PendingSteering && e.handed.id == a.ID {
		if c.running() && !c.caps.Withdraw {
			// C-TURN-59: the backend keeps it.
			c.refuse(cl, origin, a, ReasonSteeringBusy)
			return
		}
		// C-TURN-57: withdrawn from the backend. One the model has read
		// stays in its turn (C-TURN-58), and one the backend still holds
		// is dropped when it comes back.
		if c.conv != nil && c.caps.Withdraw && c.conv.Withdraw(a.ID) {
			e.handed = handedSteering{}
		}
	}
	c.apply(a, origin)
	if c.pendingGone(a.Kind, a.ID) {
		delete(e.senders, a.ID)
		delete(e.resolved, a.ID)
	}
	c.kick() // C-TURN-35
}

// pendingGone reports whether the chat no longer holds pending message id.
func (c *Chat) pendingGone(kind, id string) bool {
	if kind == ahp.PendingSteering {
		return c.state.SteeringMessage == nil || c.state.SteeringMessage.ID != id
	}
	return !slices.ContainsFunc(c.state.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == id })
}

func (c *Chat) clientConfirm(cl Client, origin *ahp.ActionOrigin, a ahp.ChatToolCallConfirmed) {
	t := c.turn
	if t == nil || a.TurnID != t.id || !t.tools[a.ToolCallID] {
		c.refuse(cl, origin, a, "No tool call of the running turn waits for that confirmation.")
		return
	}
	c.apply(a, origin)
	// The turn's own conversation takes the answer: the chat's agent, or
	// for a worker chat the proxy to the backend running it (C-SUB-12).
	if t.conv != nil {
		if err := t.conv.Confirm(a.TurnID, a.ToolCallID, a.Approved); err != nil {
			c.log.Warn("confirm tool call", "tool", a.ToolCallID, "err", err)
		}
	}
}

// kick is a client queuing, taking back or reordering a message: while
// nothing runs it lifts the pause a stop or a failure left and starts the
// head of the queue (C-TURN-34..36).
func (c *Chat) kick() {
	if c.running() {
		return
	}
	c.engine().paused = false
	c.startNext()
}

// startNext starts what waits when nothing runs. First a turn a client sent
// behind the one that just ended (C-TURN-104); then, unless a hold is on
// (see engineState), a steering message ahead of every queued one
// (C-TURN-45, 46), else the head of the queue (C-TURN-26, 28).
func (c *Chat) startNext() {
	e := c.engine()
	if c.running() || c.readOnly() {
		return
	}
	if len(e.behind) > 0 {
		c.startBehind()
		return
	}
	if e.paused || e.handed.id != "" || c.heldByResumableError() {
		return
	}
	var next *ahp.PendingMessage
	if s := c.state.SteeringMessage; s != nil {
		next = s
	} else if len(c.state.QueuedMessages) > 0 {
		next = &c.state.QueuedMessages[0]
	}
	if next == nil {
		return
	}
	p := *next
	sender := e.senders[p.ID]
	delete(e.senders, p.ID)
	resolved := e.resolved[p.ID]
	delete(e.resolved, p.ID)
	c.admit(ahp.ChatTurnStarted{
		TurnID:          uuid.NewString(),
		StartedAt:       isoTime(c.cfg.Now()),
		Message:         p.Message,
		QueuedMessageID: p.ID,
	}, nil, sender, resolved)
}

// startBehind says and runs the first turn sent behind the one that ended
// (turns already known are said again, changing nothing, as a repeated
// start does). A turn stopped while it waited is said and ended unrun.
func (c *Chat) startBehind() {
	e := c.engine()
	for len(e.behind) > 0 && !c.running() {
		h := e.behind[0]
		e.behind = e.behind[1:]
		if h.stop != nil || c.isKnownTurn(h.a.TurnID) {
			c.sayUnrun(h)
			continue
		}
		c.admit(h.a, h.origin, h.cl.Sender, h.cl.ChatAttachments)
	}
	// Repeats of the turn now running are said at once.
	for len(e.behind) > 0 && c.isKnownTurn(e.behind[0].a.TurnID) && e.behind[0].stop == nil {
		h := e.behind[0]
		e.behind = e.behind[1:]
		c.apply(h.a, h.origin)
	}
	if len(e.behind) == 0 {
		e.behind = nil
	}
}

// autoTitle names the chat after its first message (C-COMP-26): a ! command
// gives a provisional title its first message replaces (C-COMP-27, 28).
func (c *Chat) autoTitle(text string, first, isCommand bool) {
	if !first && !c.record.TitleProvisional {
		return
	}
	if !first && isCommand {
		return
	}
	if !c.record.TitleProvisional && c.state.Title != "" && c.state.Title != DefaultTitle {
		return
	}
	title := CleanTitle(text)
	if title == "" {
		return
	}
	c.setTitle(title, isCommand)
}

// DefaultTitle is an unnamed chat's title.
const DefaultTitle = "New Chat"

// CleanTitle makes a short one-line title out of a message.
func CleanTitle(text string) string {
	line := strings.TrimSpace(text)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	line = strings.Join(strings.Fields(line), " ")
	const limit = 60
	if r := []rune(line); len(r) > limit {
		line = strings.TrimSpace(string(r[:limit-1])) + "…"
	}
	return line
}

// persistRunning writes the active turn as running behind the actor; a
// streaming turn is written again every runningEvery so a crash loses at
// most that much of its tail.
func (c *Chat) persistRunning() {
	c.runningDirty = false
	rec, ok := c.runningRecord()
	if !ok {
		return
	}
	c.cfg.Store.Enqueue(putTurnOp(rec))
}

func (c *Chat) runningRecord() (store.TurnRecord, bool) {
	at := c.state.ActiveTurn
	if at == nil {
		return store.TurnRecord{}, false
	}
	body, err := json.Marshal(at)
	if err != nil {
		c.log.Error("marshal running turn", "err", err)
		return store.TurnRecord{}, false
	}
	started, _ := time.Parse(time.RFC3339Nano, at.StartedAt)
	return store.TurnRecord{
		Chat: c.cfg.URI, ID: at.ID, Seq: len(c.state.Turns), State: store.TurnRunning,
		Sender: c.senders[at.ID], Command: c.commands[at.ID], StartedAt: started, Body: body,
	}, true
}

// endedRecord is the stored form of the turn that just ended (the last of
// state.Turns).
func (c *Chat) endedRecord(id string) (store.TurnRecord, bool) {
	n := len(c.state.Turns)
	if n == 0 || c.state.Turns[n-1].ID != id {
		return store.TurnRecord{}, false
	}
	t := c.state.Turns[n-1]
	body, err := json.Marshal(t)
	if err != nil {
		c.log.Error("marshal ended turn", "err", err)
		return store.TurnRecord{}, false
	}
	started, _ := time.Parse(time.RFC3339Nano, t.StartedAt)
	return store.TurnRecord{
		Chat: c.cfg.URI, ID: t.ID, Seq: n - 1, State: string(t.State), Sender: c.senders[id],
		Point: c.points[id], Command: c.commands[id], StartedAt: started, Body: body,
	}, true
}

func (c *Chat) draftOp() store.Op {
	var raw json.RawMessage
	if c.state.Draft != nil {
		raw, _ = json.Marshal(c.state.Draft)
	}
	uri := c.cfg.URI
	c.record.Draft = raw
	return func(ctx context.Context, s *store.Store) error { return s.SetDraft(ctx, uri, raw) }
}

// turnCursor is the fetchTurns cursor naming "the turns before this one".
func turnCursor(turnID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("before:" + turnID))
}

// endCursor names the end of the chat: the page before it is the newest
// turns (what a subscribe with a view of zero turns hands out).
var endCursor = base64.RawURLEncoding.EncodeToString([]byte("end"))

func parseCursor(cur string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil {
		return "", false
	}
	if string(b) == "end" {
		return "", true
	}
	id, ok := strings.CutPrefix(string(b), "before:")
	return id, ok && id != ""
}

// FetchTurns publishes the page of turns older than cursor as
// chat/turnsLoaded to every watcher before it returns (C-CMD-11..14).
func (c *Chat) FetchTurns(ctx context.Context, cursor string) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.fetchTurns(cursor) })
	if err != nil {
		return err
	}
	return ferr
}

func (c *Chat) fetchTurns(cursor string) error {
	end := max(c.loadedFrom, 0)
	if cursor != "" {
		id, ok := parseCursor(cursor)
		if !ok {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: unrecognized cursor %q", cursor)
		}
		end = -1
		if cursor == endCursor {
			end = len(c.state.Turns)
		}
		for i := range c.state.Turns {
			if c.state.Turns[i].ID == id {
				end = i
				break
			}
		}
		if end < 0 {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: cursor %q names no turn of this chat", cursor)
		}
	}
	start := max(0, end-c.cfg.TurnsView)
	page := append([]ahp.Turn(nil), c.state.Turns[start:end]...)
	a := ahp.ChatTurnsLoaded{Turns: page}
	if page == nil {
		a.Turns = []ahp.Turn{}
	}
	if start > 0 {
		cur := turnCursor(c.state.Turns[start].ID)
		a.TurnsNextCursor = &cur
	}
	if c.loadedFrom < 0 || start < c.loadedFrom {
		c.loadedFrom = start
	}
	// The reducer prepends and dedupes; the actor's own state holds every
	// turn already, so only the watchers change.
	c.cfg.Bus.Publish(c.cfg.URI, a, nil)
	return nil
}
