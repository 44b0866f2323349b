// Package turns holds the rules of CHATS.md "Turns" as a value: what runs,
// what waits, and what a client's action, a backend's event, a stop, a
// failure or a steering message does to them. An Engine owns the one copy
// of a chat's state (its ChatState: the turns, the active turn, the queue
// and the steering message) and the bookkeeping beside it: who sent what,
// which backend a turn went to, what the backend holds and what waits
// behind the running turn.
//
// The engine does no I/O. It reduces every action into its state and tells
// its Host, in order, what follows: tell this action (the host stores what
// it makes durable, then publishes it), refuse that one, write this
// message's bytes, open the backend, a turn was admitted or ended. The
// chat actor (internal/chat) is its Host and carries those effects out
// against the bus, the store and the agent; the table tests in this
// package are a Host that writes them down.
//
// Backends are reached through agent.Conversation values the Host opens.
// A turn is handed to one route: the chat's agent, or, for a ! command,
// the host's own shell backend; which one differs only in the capabilities
// it declares.
package turns

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/reduce"
)

// ctxBackground is the context of a backend call: Send and Stop hand work
// to the backend's goroutines and return.
var ctxBackground = context.Background()

// Refusal texts; the first two are VS Code's agent host's, as CHATS.md
// quotes them.
const (
	ReasonNoSteering     = "The session provider does not support steering messages."
	ReasonSteeringBusy   = "Cannot change a steering message while it is being processed."
	ReasonNoActiveTurn   = "No turn is running in this chat."
	ReasonReadOnly       = "This chat is read-only."
	ReasonNotResumable   = "Only the latest turn, ended by a resumable error while nothing runs, can be resumed."
	ReasonNoTurnID       = "chat/turnStarted needs a turnId."
	ReasonNoConfirmation = "No tool call of the running turn waits for that confirmation."
	// A client's run of a tool, and what answers a tool call or an input
	// request, name one that is there and in the state they answer
	// (AHP: the server rejects a completion from a client that does not
	// run the call).
	ReasonNoSuchToolCall    = "No tool call of the running turn has that id."
	ReasonNotToolOwner      = "Only the client that runs this tool call completes it."
	ReasonAgentRunsTool     = "The agent runs this tool call; a client completes only a tool it runs."
	ReasonToolNotRunning    = "This tool call is not running, so it has no result to take."
	ReasonNoResultToConfirm = "This tool call's result does not wait for confirmation."
	ReasonNoInputRequest    = "No input request of the running turn has that id, or it was answered."
	ReasonBadInputResponse  = "An input request is answered with accept, decline or cancel."
)

// MaxWaiting bounds what may wait in one chat: the queued messages, and
// the turns sent behind the running one, each. Past it a client's message
// is refused, never dropped.
const MaxWaiting = 1024

// ReasonTooMuchWaits refuses a message past MaxWaiting.
const ReasonTooMuchWaits = "Too many messages wait in this chat; take one back or let the running turn end first."

// SenderMetaKey is the _meta key of a message that names who sent it, as a
// typed reference: "user:<id>" or "root:<host>" (C-TURN-04..07).
const SenderMetaKey = "ahpd.sender"

// The ending of a turn a dead process left running (C-TURN-10).
const (
	HostRestartedErrorType = "hostRestarted"
	HostRestartedMessage   = "The host restarted while this turn was running."
)

// LocalPrefix starts a message that is a command for the host's shell.
const LocalPrefix = "!"

// Route is the backend a message goes to.
type Route int

const (
	// RouteAgent is the chat's agent.
	RouteAgent Route = iota
	// RouteLocal is the host's own shell backend: a ! command (TERMINALS.md).
	RouteLocal
	// RouteHost is the host's own slash commands (/rename), which the host
	// answers itself, as VS Code's host does.
	RouteHost
)

func (r Route) String() string {
	switch r {
	case RouteLocal:
		return "local"
	case RouteHost:
		return "host"
	}
	return "agent"
}

// RouteOf is the route of a message's text: "!" and a command is local, a
// host command (ParseHostCommand) is the host's, everything else goes to the
// agent (C-TURN-31, 48).
func RouteOf(text string) Route {
	if strings.HasPrefix(text, LocalPrefix) && len(strings.TrimSpace(text)) > len(LocalPrefix) {
		return RouteLocal
	}
	if _, ok := ParseHostCommand(text); ok {
		return RouteHost
	}
	return RouteAgent
}

// promptText is what a route's backend is handed for text: a command
// without its prefix.
func promptText(r Route, text string) string {
	if r == RouteLocal {
		return strings.TrimSpace(strings.TrimPrefix(text, LocalPrefix))
	}
	return text
}

// From is who sent a client action.
type From struct {
	// Client is the Host's handle on the client, handed back in Refuse.
	Client any
	// Sender is the typed reference the client's turns name.
	Sender string
	// Extra is what the Host resolved for the message the action carries
	// (a chat attachment's excerpt); it is handed back to Prepare when the
	// message starts.
	Extra any
}

// Start says a turn the engine admitted.
type Start struct {
	TurnID string
	Text   string
	// First: the chat had no turn before this one.
	First bool
	Route Route
}

// Host carries out what the engine decides. Every method is called from
// the goroutine that drives the engine, in the order the effects happen.
type Host interface {
	// Tell publishes a, already reduced into the engine's state, after
	// storing what it makes durable.
	Tell(a ahp.Action, origin *ahp.ActionOrigin)
	// Refuse answers a client's action with a refusal, to that client.
	Refuse(from From, origin *ahp.ActionOrigin, a ahp.Action, reason string)
	// Prepare is what a turn's message becomes when it starts (its bytes
	// written, C-ATT-07..10): the message the chat keeps, what the backend
	// is handed, and the first attachment nobody can honour.
	Prepare(m ahp.Message, extra any) (ahp.Message, []agent.Attachment, error)
	// Open returns the conversation of route r, opening it when needed. An
	// error ends the turn; a Failure names its errorType.
	Open(r Route) (agent.Conversation, agent.Capabilities, error)
	// HostContext is what the host has to say on the next turn it sends
	// (C-TURN-109), consumed by the call.
	HostContext() string
	// Admitted: a turn was admitted and said (before it is sent).
	Admitted(s Start)
	// Sent: turn id was handed to route r's backend.
	Sent(id string, r Route)
	// Point is the backend's name for where turn id ended, said before the
	// turn's ending is told (and again when the backend reports it late).
	Point(id, point string)
	// Ended: turn id ended with outcome (its workers end with it).
	Ended(id string, outcome agent.Outcome)
	// WaitingChanged: the turns sent behind the running one changed.
	WaitingChanged()
	// SpawnedContent is what a spawning tool call's result says of the
	// worker it spawned (C-SUB-17).
	SpawnedContent(toolCallID string) []ahp.ToolResultContent
	// OlderTurn reports whether id names one of the chat's turns older
	// than the ones the state holds (Window.Older): the host keeps them.
	// Asked only when there are such turns, so a repeated start of an old
	// turn stays a repeat (AHP-1.0.md §5).
	OlderTurn(id string) bool
	// Warn logs something the engine chose to ignore.
	Warn(msg string, args ...any)
	Now() time.Time
	NewID() string
}

// Failure is an error that names the errorType of the turn it ends.
type Failure struct {
	Type    string
	Message string
}

func (f *Failure) Error() string { return f.Message }

// Active is the engine's record of the running turn.
type Active struct {
	ID      string
	Started time.Time
	Sender  string
	Route   Route
	// Sent: the prompt was handed to the backend (steering may be handed).
	Sent bool
	// WaitsForSlot: the prompt waits unsent for the host to open its
	// backend (Host.Open said Wait).
	WaitsForSlot bool
	// Conv is the conversation the turn was handed to, nil until then;
	// Caps are its backend's.
	Conv agent.Conversation
	Caps agent.Capabilities

	// Part bookkeeping: the open markdown and reasoning parts, so text
	// continues the part it belongs to and starts a new one after any
	// other part.
	mdPart, rsPart string
	lastKind       string
	nextPart       int
	tools          map[string]bool
	// slotNoticed: the turn said it waits for an agent process.
	slotNoticed bool
	// clientRun are the turn's calls a client runs (agent.ToolCall.Client).
	clientRun map[string]bool
	// asked are the input requests the turn's backend made (input.go).
	asked map[string]bool
}

// on reports whether the turn belongs to conv: handed to it, or not handed
// anywhere yet.
func (t *Active) on(conv agent.Conversation) bool { return t.Conv == nil || t.Conv == conv }

// Engine is one chat's turn engine. It is not safe for concurrent use: the
// chat actor's goroutine owns it.
//
// Three holds keep what waits from starting on its own (startNext), each
// lifted by something else:
//
//	paused     the latest turn was stopped or failed; lifted when a client
//	           queues, takes back or reorders a message while nothing runs,
//	           or a turn completes (C-TURN-32..37)
//	resumable  the latest turn ended in an error a client can resume (read
//	           off the state); lifted when it is resumed and completes, or
//	           another turn completes (C-TURN-38, 39)
//	handed     the backend holds a steering message it was handed and has not
//	           run; lifted when it reports it consumed, handed back or run as
//	           a turn of its own (C-TURN-40)
//
// A client's chat/turnStarted is never held by them: one sent while nothing
// runs starts at once, and one sent behind a running turn starts when that
// turn ends, however it ended, unless a stop ended it (behind).
type Engine struct {
	host Host
	st   ahp.ChatState
	// hasAgent: the chat's provider is known here; caps are its agent's.
	hasAgent bool
	caps     agent.Capabilities

	active *Active
	// handed is the steering message the backend took (SteerTaken) and has
	// not reported consumed or returned.
	handed handed
	paused bool
	// behind holds, in order, the chat/turnStarted actions clients sent
	// while a turn was active. The reducer replaces the active turn on a
	// start of another id, so none is said before the turn in front of it
	// ends; then the head is said and runs, or, when a stop ended that
	// turn, each is said and ended cancelled, unrun (C-TURN-104..106).
	behind []held
	// open lists the turns handed to a backend whose end it has not
	// reported yet, oldest first. A stopped turn stays open until the
	// backend says it ended.
	open []openTurn
	// unsent is the running turn's prompt while it waits for its backend to
	// end the turn in front of it: a backend that does not say
	// OneTurnAtATime is never sent a turn while it runs another.
	unsent *agent.Turn
	// pending is who set each pending message, and what the host resolved
	// for it, by message id (C-TURN-04, C-ATT-23).
	pending map[string]waiting
	// turns is who sent each turn and which route ran it, by turn id
	// (C-TURN-08), for the turns the state holds and the running one; the
	// Host stores them with the turn.
	turns map[string]TurnInfo
	// older is how many of the chat's turns come before st.Turns: a loaded
	// chat keeps only its newest ended turns (Trim), and the host's store
	// holds the rest. Turn st.Turns[i] is the chat's turn older+i.
	older int
}

// handed is a steering message a backend took: its id, the turn it was
// handed to, the message as handed (kept after a stop or a client took it
// out of the chat, so a turn the backend opens for it still says it), and
// who set it, and the conversation holding it.
type handed struct {
	id     string
	turnID string
	msg    ahp.Message
	sender string
	conv   agent.Conversation
}

type openTurn struct {
	conv agent.Conversation
	id   string
}

type waiting struct {
	sender string
	extra  any
}

// TurnInfo is what the engine knows of a turn beside its state.
type TurnInfo struct {
	Sender string
	Route  Route
}

// held is a client's chat/turnStarted waiting behind the active turn, and
// the client's stop of it when one came while it waited.
type held struct {
	from   From
	origin *ahp.ActionOrigin
	a      ahp.ChatTurnStarted
	stop   *heldStop
}

type heldStop struct {
	origin *ahp.ActionOrigin
	a      ahp.ChatTurnCancelled
}

// Options configure an engine.
type Options struct {
	// HasAgent: the chat's provider is known on this host. Without one a
	// turn still starts, and ends in the error Open gives it.
	HasAgent bool
	// Caps are the chat's agent's capabilities.
	Caps agent.Capabilities
	// Older is how many of the chat's turns come before the state's
	// (Window.Older).
	Older int
}

// New returns an engine over state st (read from the store).
func New(h Host, st ahp.ChatState, o Options) *Engine {
	if st.Turns == nil {
		st.Turns = []ahp.Turn{}
	}
	return &Engine{host: h, st: st, hasAgent: o.HasAgent, caps: o.Caps, pending: map[string]waiting{}, turns: map[string]TurnInfo{}, older: max(o.Older, 0)}
}

// State is the chat's state. The caller may read it; it changes it only
// through Apply, or for what no reducer covers (the title, a load).
func (e *Engine) State() *ahp.ChatState { return &e.st }

// Active is the running turn, nil when none runs.
func (e *Engine) Active() *Active { return e.active }

// Running reports whether a turn is active.
func (e *Engine) Running() bool { return e.active != nil || e.st.ActiveTurn != nil }

// Busy reports whether anything of the engine's would be lost if the chat
// unloaded now: a turn running or waiting, a backend turn not yet ended, a
// steering message the backend holds.
func (e *Engine) Busy() bool {
	return e.Running() || len(e.open) > 0 || e.handed.id != "" || len(e.behind) > 0 || e.unsent != nil
}

// Turn is what the engine knows of turn id.
func (e *Engine) Turn(id string) TurnInfo { return e.turns[id] }

// Remember records a stored turn's sender and route, read back at load.
func (e *Engine) Remember(id string, info TurnInfo) {
	if info.Sender != "" || info.Route != RouteAgent {
		e.turns[id] = info
	}
}

// Apply reduces a into the state and tells it: the way every action the
// engine does not decide on (a flag, a tool result, a truncation the host
// checked) reaches the chat.
func (e *Engine) Apply(a ahp.Action, origin *ahp.ActionOrigin) {
	if t, ok := a.(ahp.ChatTruncated); ok && t.TurnID == "" {
		e.older = 0 // cleared: no turn is older than none
	}
	reduce.Chat(&e.st, a)
	e.host.Tell(a, origin)
}

func (e *Engine) refuse(from From, origin *ahp.ActionOrigin, a ahp.Action, reason string) {
	e.host.Refuse(from, origin, a, reason)
}

func (e *Engine) readOnly() bool { return e.st.Interactivity == "read-only" }

// Client takes a client's action that the Host checked is dispatchable and
// granted.
func (e *Engine) Client(from From, origin *ahp.ActionOrigin, a ahp.Action) {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		e.clientTurnStarted(from, origin, a)
	case ahp.ChatTurnCancelled:
		e.clientStop(from, origin, a)
	case ahp.ChatTurnResume:
		e.clientResume(from, origin, a)
	case ahp.ChatPendingMessageSet:
		e.clientPendingSet(from, origin, a)
	case ahp.ChatPendingMessageRemoved:
		e.clientPendingRemoved(from, origin, a)
	case ahp.ChatQueuedMessagesReordered:
		e.Apply(a, origin)
		e.kick() // C-TURN-36
	case ahp.ChatToolCallConfirmed:
		e.clientConfirm(from, origin, a)
	case ahp.ChatToolCallComplete:
		e.clientToolComplete(from, origin, a)
	case ahp.ChatToolCallResultConfirmed:
		e.clientToolResultConfirmed(from, origin, a)
	case ahp.ChatInputCompleted:
		// Said to every client (the part shows it answered), then handed
		// to the backend that asked (input.go).
		if reason := inputRefusal(&e.st, a); reason != "" {
			e.refuse(from, origin, a, reason)
			return
		}
		e.Apply(a, origin)
		if err := e.active.handAnswer(&e.st, a); err != nil {
			e.host.Warn("hand an input answer", "request", a.RequestID, "err", err)
		}
	case ahp.ChatInputAnswerChanged:
		// A draft answer belongs to a request that still waits.
		if !inputWaitsIn(&e.st, a.RequestID) {
			e.refuse(from, origin, a, ReasonNoInputRequest)
			return
		}
		e.Apply(a, origin)
	default:
		e.Apply(a, origin)
	}
}

// clientTurnStarted admits a client's turn, which the host says again to
// every watcher (C-TURN-01). One sent while a turn runs waits behind it and
// is said once that turn ends (C-TURN-104).
func (e *Engine) clientTurnStarted(from From, origin *ahp.ActionOrigin, a ahp.ChatTurnStarted) {
	if e.readOnly() {
		e.refuse(from, origin, a, ReasonReadOnly)
		return
	}
	if a.TurnID == "" {
		e.refuse(from, origin, a, ReasonNoTurnID)
		return
	}
	if e.Window().known(a.TurnID) {
		// Idempotent (AHP-1.0.md §5): said again, changes nothing, and the
		// backend is not started again.
		e.Window().sayAgain(a, origin)
		return
	}
	if e.Running() || e.isBehind(a.TurnID) {
		if len(e.behind) >= MaxWaiting {
			e.refuse(from, origin, a, ReasonTooMuchWaits)
			return
		}
		e.behind = append(e.behind, held{from: from, origin: origin, a: a})
		e.host.WaitingChanged() // turns sent behind survive a restart
		return
	}
	e.admit(a, origin, from.Sender, from.Extra)
}

func (e *Engine) isBehind(id string) bool {
	return slices.ContainsFunc(e.behind, func(h held) bool { return h.a.TurnID == id })
}

// WithSender returns m with sender in its _meta (C-TURN-07).
func WithSender(m ahp.Message, sender string) ahp.Message {
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
func (e *Engine) say(a ahp.ChatTurnStarted, origin *ahp.ActionOrigin, sender string) *Active {
	if a.StartedAt == "" {
		a.StartedAt = ISOTime(e.host.Now())
	}
	if sender == "" {
		sender, _ = a.Message.Meta[SenderMetaKey].(string)
	}
	a.Message = WithSender(a.Message, sender)
	started, err := time.Parse(time.RFC3339Nano, a.StartedAt)
	if err != nil {
		started = e.host.Now()
	}
	route := RouteOf(a.Message.Text)
	// Who sent it and its route go into the running record the host
	// commits before the turn is said.
	e.Remember(a.TurnID, TurnInfo{Sender: sender, Route: route})
	t := &Active{ID: a.TurnID, Started: started, Sender: sender, Route: route, tools: map[string]bool{}, clientRun: map[string]bool{}}
	e.active = t
	e.Apply(a, origin)
	return t
}

// admit starts a turn: says chat/turnStarted (with the sender in the
// message's _meta), records it as running, and hands it to its route's
// backend (C-TURN-29..31).
//
// The message's bytes are written before the turn is said (Prepare), and a
// chat attachment whose pin nobody can honour ends the turn in a chat/error
// of errorType sendFailed before the backend is handed it (C-ATT-32, 33).
func (e *Engine) admit(a ahp.ChatTurnStarted, origin *ahp.ActionOrigin, sender string, extra any) {
	first := len(e.st.Turns) == 0 && e.older == 0
	msg, atts, pinErr := e.host.Prepare(a.Message, extra)
	a.Message = msg
	t := e.say(a, origin, sender)
	e.host.Admitted(Start{TurnID: t.ID, Text: msg.Text, First: first, Route: t.Route})
	if pinErr != nil {
		e.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "sendFailed", Message: pinErr.Error()})
		return
	}
	turn := agent.Turn{ID: a.TurnID, Text: promptText(t.Route, msg.Text), Model: modelOf(msg), Attachments: atts}
	if t.Route == RouteAgent {
		// C-TURN-109: what the host has to say on this turn goes into its
		// prompt.
		turn.HostContext = e.host.HostContext()
	}
	e.send(t, turn)
}

func modelOf(m ahp.Message) string {
	if m.Model != nil {
		return m.Model.ID
	}
	return ""
}

// send hands a turn to its route's backend, opening the conversation
// first. A backend that does not say OneTurnAtATime gets no turn while it
// still ends the one in front of it: the turn waits unsent until the
// backend reports that end (C-TURN-104).
func (e *Engine) send(t *Active, turn agent.Turn) {
	conv, caps, err := e.host.Open(t.Route)
	if w, ok := err.(*Wait); ok {
		e.Slot().begin(t, turn, w)
		return
	}
	if err != nil {
		e.endTurn(failureEnd(err, "agentUnavailable"))
		return
	}
	t.Conv, t.Caps = conv, caps
	if !caps.OneTurnAtATime && e.openOn(conv) > 0 {
		e.unsent = &turn
		return
	}
	if err := conv.Send(ctxBackground, turn); err != nil {
		e.endTurn(failureEnd(err, "sendFailed"))
		return
	}
	e.open = append(e.open, openTurn{conv: conv, id: turn.ID})
	t.Sent = true
	e.host.Sent(t.ID, t.Route)
	// C-TURN-41: steering is handed at the turn's start.
	e.handSteering()
}

func failureEnd(err error, errorType string) agent.End {
	if f, ok := err.(*Failure); ok {
		return agent.End{Outcome: agent.OutcomeError, ErrorType: f.Type, Message: f.Message}
	}
	return agent.End{Outcome: agent.OutcomeError, ErrorType: errorType, Message: err.Error()}
}

func (e *Engine) openOn(conv agent.Conversation) int {
	n := 0
	for _, o := range e.open {
		if o.conv == conv {
			n++
		}
	}
	return n
}

// backendEnded notes that conv ended turn id, and sends the running turn's
// prompt when it waited for that.
func (e *Engine) backendEnded(conv agent.Conversation, id string) {
	if i := slices.IndexFunc(e.open, func(o openTurn) bool { return o.conv == conv && o.id == id }); i >= 0 {
		e.open = slices.Delete(e.open, i, i+1)
	}
	t := e.active
	if e.unsent == nil || t == nil || t.ID != e.unsent.ID || t.Sent || t.Conv != conv || e.openOn(conv) > 0 {
		return
	}
	turn := *e.unsent
	e.unsent = nil
	e.send(t, turn)
}

// ConversationGone handles a backend conversation that ended (its process
// exited) or that the host ended (it said nothing for too long): the
// engine forgets what that backend held, and the running turn on it ends
// with end. The next turn opens the conversation again, resumed. A turn
// that waited unsent for the old process goes to the new one.
func (e *Engine) ConversationGone(conv agent.Conversation, end agent.End) {
	e.Forget(conv)
	t := e.active
	if t == nil || !t.on(conv) {
		e.startNext()
		return
	}
	if e.unsent != nil && !t.Sent && e.unsent.ID == t.ID {
		turn := *e.unsent
		e.unsent = nil
		e.send(t, turn)
		return
	}
	e.endTurn(end)
}

// Forget drops what the engine tracked of conversation conv, which the
// host closed while no turn of it ran (or is about to end the one that
// does): the turns it had not ended, and a steering message it held.
func (e *Engine) Forget(conv agent.Conversation) {
	if e.handed.id != "" && e.handed.conv == conv {
		e.handed = handed{}
	}
	e.open = slices.DeleteFunc(e.open, func(o openTurn) bool { return o.conv == conv })
}

// endTurn ends the running turn with exactly one ending action
// (C-TURN-10..14), then starts what may start: a completed turn, and one
// whose backend says a failure goes on, start what waits (C-TURN-26, 27);
// any other pauses it (C-TURN-32, 33).
func (e *Engine) endTurn(end agent.End) {
	t := e.active
	if t == nil {
		return
	}
	e.active = nil
	if e.unsent != nil && e.unsent.ID == t.ID {
		e.unsent = nil
	}
	dur := max(0, e.host.Now().Sub(t.Started).Milliseconds())
	if end.Point != "" {
		e.host.Point(t.ID, end.Point) // stored with the ending
	}
	switch end.Outcome {
	case agent.OutcomeComplete:
		e.Apply(ahp.ChatTurnComplete{TurnID: t.ID, Duration: dur}, nil)
	case agent.OutcomeCancelled:
		e.Apply(ahp.ChatTurnCancelled{TurnID: t.ID, Duration: dur}, nil)
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
		resumable := end.Resumable && t.Caps.Resume
		e.Apply(ahp.ChatError{TurnID: t.ID, Duration: dur, Part: ahp.ErrorPart(info, resumable)}, nil)
	}
	e.host.Ended(t.ID, end.Outcome)
	e.paused = end.Outcome != agent.OutcomeComplete && !t.Caps.FailureGoesOn
	e.startNext()
}

// Recover ends a turn left running by a process that died (C-TURN-10):
// once, with an error saying the host restarted.
func (e *Engine) Recover() {
	at := e.st.ActiveTurn
	if at == nil {
		return
	}
	started, err := time.Parse(time.RFC3339Nano, at.StartedAt)
	if err != nil {
		started = e.host.Now()
	}
	e.active = &Active{ID: at.ID, Started: started, Sender: e.turns[at.ID].Sender, Route: e.turns[at.ID].Route}
	e.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: HostRestartedErrorType, Message: HostRestartedMessage})
}

// clientStop handles chat/turnCancelled from a client: the stop is said,
// then every pending steering message is taken out (C-TURN-52, 53), then
// the turns sent behind the stopped one are said and ended unrun
// (C-TURN-105, 106), then the backend is told. A stop starts nothing
// (C-TURN-54).
func (e *Engine) clientStop(from From, origin *ahp.ActionOrigin, a ahp.ChatTurnCancelled) {
	t := e.active
	if t == nil || a.TurnID != t.ID {
		for i := range e.behind {
			if h := &e.behind[i]; h.a.TurnID == a.TurnID && h.stop == nil {
				// A turn waiting behind the running one: it is said and
				// ended, unrun, once the one in front of it ends.
				h.stop = &heldStop{origin: origin, a: a}
				return
			}
		}
		e.refuse(from, origin, a, ReasonNoActiveTurn)
		return
	}
	e.Stop(origin, a)
}

// Stop stops the running turn as a client's chat/turnCancelled a says (the
// host's own stop of a worker's turn included).
func (e *Engine) Stop(origin *ahp.ActionOrigin, a ahp.ChatTurnCancelled) {
	t := e.active
	if t == nil || t.ID != a.TurnID {
		return
	}
	if a.Duration <= 0 {
		a.Duration = max(0, e.host.Now().Sub(t.Started).Milliseconds())
	}
	e.active = nil
	e.Apply(a, origin)
	e.host.Ended(t.ID, agent.OutcomeCancelled) // C-TURN-72
	if s := e.st.SteeringMessage; s != nil {
		e.Apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: s.ID}, nil)
		delete(e.pending, s.ID)
	}
	behind := e.behind
	e.behind = nil
	for _, h := range behind {
		e.sayUnrun(h)
	}
	if len(behind) > 0 {
		e.host.WaitingChanged()
	}
	e.paused = true
	switch {
	case !t.Sent:
		// Stopped before its prompt was sent: it ends unsent (C-TURN-108).
		e.unsent = nil
	case t.Conv != nil:
		if err := t.Conv.Stop(ctxBackground); err != nil {
			e.host.Warn("stop turn", "turn", t.ID, "err", err)
		}
	}
}

// sayUnrun says a turn sent behind a stopped one and ends it cancelled
// without running it. A client's stop of it while it waited is its ending,
// said as sent.
func (e *Engine) sayUnrun(h held) {
	if e.Window().known(h.a.TurnID) {
		// A repeated start: said again, changes nothing.
		e.Window().sayAgain(h.a, h.origin)
		return
	}
	// Never run, but said: its bytes are written as a run turn's are
	// (C-ATT-10).
	h.a.Message, _, _ = e.host.Prepare(h.a.Message, nil)
	t := e.say(h.a, h.origin, h.from.Sender)
	e.active = nil
	end, origin := ahp.ChatTurnCancelled{TurnID: t.ID}, (*ahp.ActionOrigin)(nil)
	if h.stop != nil {
		end, origin = h.stop.a, h.stop.origin
		end.Duration = max(0, end.Duration)
	}
	e.Apply(end, origin)
}

// clientResume reopens the latest turn when it failed resumably
// (AHP-1.0.md §3) and sends it again.
func (e *Engine) clientResume(from From, origin *ahp.ActionOrigin, a ahp.ChatTurnResume) {
	if e.readOnly() {
		e.refuse(from, origin, a, ReasonReadOnly)
		return
	}
	if e.active != nil || reduce.CheckTurnResume(&e.st, a.TurnID) != nil {
		e.refuse(from, origin, a, ReasonNotResumable)
		return
	}
	last := e.st.Turns[len(e.st.Turns)-1]
	started, err := time.Parse(time.RFC3339Nano, last.StartedAt)
	if err != nil {
		started = e.host.Now()
	}
	info := e.turns[last.ID]
	t := &Active{ID: last.ID, Started: started, Sender: info.Sender, Route: info.Route, tools: map[string]bool{}, clientRun: map[string]bool{}}
	e.active = t
	e.Apply(a, origin)
	_, atts, _ := e.host.Prepare(last.Message, nil)
	e.send(t, agent.Turn{ID: last.ID, Text: promptText(t.Route, last.Message.Text), Model: modelOf(last.Message), Attachments: atts})
}

// resumable reports whether t ended in an error a client can resume.
func resumable(t *ahp.Turn) bool {
	if t.State != ahp.TurnError || len(t.ResponseParts) == 0 {
		return false
	}
	return t.ResponseParts[len(t.ResponseParts)-1].IsResumableError()
}

// heldByResumableError: nothing starts while the latest turn ended in an
// error a client can resume (C-TURN-38).
func (e *Engine) heldByResumableError() bool {
	n := len(e.st.Turns)
	return n > 0 && resumable(&e.st.Turns[n-1])
}

// clientPendingSet queues or steers (C-TURN-20..23, 49..51).
func (e *Engine) clientPendingSet(from From, origin *ahp.ActionOrigin, a ahp.ChatPendingMessageSet) {
	if e.readOnly() {
		e.refuse(from, origin, a, ReasonReadOnly)
		return
	}
	switch a.Kind {
	case ahp.PendingQueued:
		known := slices.ContainsFunc(e.st.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == a.ID })
		if !known && len(e.st.QueuedMessages) >= MaxWaiting {
			e.refuse(from, origin, a, ReasonTooMuchWaits)
			return
		}
		e.notePending(a.ID, from)
		e.Apply(a, origin)
		e.kick() // C-TURN-34
	case ahp.PendingSteering:
		if e.hasAgent && !e.caps.Steering {
			// C-TURN-49: a turn running or not.
			e.refuse(from, origin, a, ReasonNoSteering)
			return
		}
		if h := e.handed; h.id != "" {
			if h.id == a.ID {
				if !SameMessage(h.msg, a.Message) {
					e.refuse(from, origin, a, ReasonSteeringBusy) // C-TURN-51
					return
				}
				// C-TURN-50: answered, and not handed twice.
				e.Apply(a, origin)
				return
			}
			if s := e.st.SteeringMessage; s != nil && s.ID == h.id {
				// Another message would replace the one being processed.
				e.refuse(from, origin, a, ReasonSteeringBusy)
				return
			}
		}
		e.notePending(a.ID, from)
		e.Apply(a, origin)
		if e.Running() {
			e.handSteering()
		} else {
			e.kick()
		}
	default:
		e.refuse(from, origin, a, "Unknown pending message kind \""+a.Kind+"\".")
	}
}

// notePending keeps who set pending message id and what the host resolved
// for it, until it starts; the sender is stored with the message.
func (e *Engine) notePending(id string, from From) {
	if from.Sender == "" && from.Extra == nil {
		delete(e.pending, id)
		return
	}
	e.pending[id] = waiting{sender: from.Sender, extra: from.Extra}
}

// SameMessage reports whether two messages are the same, _meta included.
func SameMessage(a, b ahp.Message) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// clientPendingRemoved takes a pending message back, said as the client
// sent it, one the chat no longer holds included (C-TURN-55..59).
func (e *Engine) clientPendingRemoved(from From, origin *ahp.ActionOrigin, a ahp.ChatPendingMessageRemoved) {
	if a.Kind == ahp.PendingSteering && e.handed.id == a.ID {
		conv, caps := e.handed.conv, e.caps
		if e.Running() && !caps.Withdraw {
			// C-TURN-59: the backend keeps it.
			e.refuse(from, origin, a, ReasonSteeringBusy)
			return
		}
		// C-TURN-57: withdrawn from the backend. One the model has read
		// stays in its turn (C-TURN-58), and one the backend still holds
		// is dropped when it comes back.
		if conv != nil && caps.Withdraw && conv.Withdraw(a.ID) {
			e.handed = handed{}
		}
	}
	e.Apply(a, origin)
	if e.pendingGone(a.Kind, a.ID) {
		delete(e.pending, a.ID)
	}
	e.kick() // C-TURN-35
}

// pendingGone reports whether the chat no longer holds pending message id.
func (e *Engine) pendingGone(kind, id string) bool {
	if kind == ahp.PendingSteering {
		return e.st.SteeringMessage == nil || e.st.SteeringMessage.ID != id
	}
	return !slices.ContainsFunc(e.st.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == id })
}

// toolCallIn is the running turn's tool call id as the chat's state st
// holds it; nil when turnID is not the running turn or it has no such call.
func toolCallIn(st *ahp.ChatState, turnID, id string) *ahp.ToolCallState {
	at := st.ActiveTurn
	if at == nil || at.ID != turnID {
		return nil
	}
	for _, p := range at.ResponseParts {
		if p.Kind == ahp.PartToolCall && p.ToolCall != nil && p.ToolCall.ToolCallID == id {
			return p.ToolCall
		}
	}
	return nil
}

// inputWaitsIn reports whether st's running turn holds input request id
// unanswered.
func inputWaitsIn(st *ahp.ChatState, id string) bool {
	at := st.ActiveTurn
	if at == nil {
		return false
	}
	return slices.ContainsFunc(at.ResponseParts, func(p ahp.ResponsePart) bool {
		return p.Kind == ahp.PartInputRequest && p.Request != nil && p.Request.ID == id && p.Response == ""
	})
}

func (e *Engine) clientConfirm(from From, origin *ahp.ActionOrigin, a ahp.ChatToolCallConfirmed) {
	t := e.active
	if t == nil || a.TurnID != t.ID || !t.tools[a.ToolCallID] {
		e.refuse(from, origin, a, ReasonNoConfirmation)
		return
	}
	if tc := toolCallIn(&e.st, a.TurnID, a.ToolCallID); tc == nil || tc.Status != ahp.ToolPendingConfirmation {
		// A call that asks nothing (a client's run of a tool under way,
		// one already answered) has no confirmation to take (AHP: MUST
		// reject).
		e.refuse(from, origin, a, ReasonNoConfirmation)
		return
	}
	e.Apply(a, origin)
	// The turn's own conversation takes the answer: the chat's agent, or
	// for a worker chat the proxy to the backend running it (C-SUB-12).
	if t.Conv != nil {
		if err := t.Conv.Confirm(a.TurnID, a.ToolCallID, a.Approved); err != nil {
			e.host.Warn("confirm tool call", "tool", a.ToolCallID, "err", err)
		}
	}
}

// clientToolComplete is a client's run of a tool: said as every client's
// action is, and, for a call the turn's backend left to a client, handed to
// that backend (for a worker chat, the proxy to the backend running the
// worker) (C-SUB-14).
func (e *Engine) clientToolComplete(from From, origin *ahp.ActionOrigin, a ahp.ChatToolCallComplete) {
	tc := toolCallIn(&e.st, a.TurnID, a.ToolCallID)
	var reason string
	switch {
	case tc == nil:
		reason = ReasonNoSuchToolCall
	case tc.Status == ahp.ToolAuthRequired && !a.Result.Success:
		// A failed result cancels a call waiting on authentication,
		// whoever runs it (AHP).
	case tc.Contributor == nil || tc.Contributor.Kind != ahp.ContributorClient:
		reason = ReasonAgentRunsTool
	case origin == nil || tc.Contributor.ClientID != origin.ClientID:
		reason = ReasonNotToolOwner
	case tc.Status != ahp.ToolRunning && tc.Status != ahp.ToolPendingConfirmation:
		// Already completed, or its result waits for confirmation: a
		// second result is not taken.
		reason = ReasonToolNotRunning
	}
	if reason != "" {
		e.refuse(from, origin, a, reason)
		return
	}
	e.Apply(a, origin)
	t := e.active
	if t == nil || a.TurnID != t.ID || !t.clientRun[a.ToolCallID] {
		return
	}
	runner, ok := t.Conv.(agent.ClientToolRunner)
	if !ok {
		return
	}
	res := agent.ClientToolResult{Success: a.Result.Success, Output: toolResultText(a.Result), Error: string(a.Result.Error)}
	if err := runner.ClientToolResult(a.TurnID, a.ToolCallID, res); err != nil {
		e.host.Warn("hand a client's tool result", "tool", a.ToolCallID, "err", err)
	}
}

// clientToolResultConfirmed is the confirmation of a client-run call's
// result, handed to the backend as the result was.
func (e *Engine) clientToolResultConfirmed(from From, origin *ahp.ActionOrigin, a ahp.ChatToolCallResultConfirmed) {
	if tc := toolCallIn(&e.st, a.TurnID, a.ToolCallID); tc == nil || tc.Status != ahp.ToolPendingResultConfirmation {
		e.refuse(from, origin, a, ReasonNoResultToConfirm)
		return
	}
	e.Apply(a, origin)
	t := e.active
	if t == nil || a.TurnID != t.ID || !t.clientRun[a.ToolCallID] {
		return
	}
	if runner, ok := t.Conv.(agent.ClientToolRunner); ok {
		if err := runner.ClientToolResultConfirmed(a.TurnID, a.ToolCallID, a.Approved); err != nil {
			e.host.Warn("hand a client's tool result confirmation", "tool", a.ToolCallID, "err", err)
		}
	}
}

// toolResultText is the text of a tool result's content.
func toolResultText(r ahp.ToolCallResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// kick is a client queuing, taking back or reordering a message: while
// nothing runs it lifts the pause a stop or a failure left and starts the
// head of the queue (C-TURN-34..36).
func (e *Engine) kick() {
	if e.Running() {
		return
	}
	e.paused = false
	e.startNext()
}

// startNext starts what waits when nothing runs. First a turn a client sent
// behind the one that just ended (C-TURN-104); then, unless a hold is on
// (see Engine), a steering message ahead of every queued one (C-TURN-45,
// 46), else the head of the queue (C-TURN-26, 28).
func (e *Engine) startNext() {
	if e.Running() || e.readOnly() {
		return
	}
	if len(e.behind) > 0 {
		e.startBehind()
		return
	}
	if e.paused || e.handed.id != "" || e.heldByResumableError() {
		return
	}
	var next *ahp.PendingMessage
	if s := e.st.SteeringMessage; s != nil {
		next = s
	} else if len(e.st.QueuedMessages) > 0 {
		next = &e.st.QueuedMessages[0]
	}
	if next == nil {
		return
	}
	p := *next
	w := e.pending[p.ID]
	delete(e.pending, p.ID)
	e.admit(ahp.ChatTurnStarted{
		TurnID:          e.host.NewID(),
		StartedAt:       ISOTime(e.host.Now()),
		Message:         p.Message,
		QueuedMessageID: p.ID,
	}, nil, w.sender, w.extra)
}

// startBehind says and runs the first turn sent behind the one that ended
// (turns already known are said again, changing nothing, as a repeated
// start does). A turn stopped while it waited is said and ended unrun.
func (e *Engine) startBehind() {
	for len(e.behind) > 0 && !e.Running() {
		h := e.behind[0]
		e.behind = e.behind[1:]
		if h.stop != nil || e.Window().known(h.a.TurnID) {
			e.sayUnrun(h)
			continue
		}
		e.admit(h.a, h.origin, h.from.Sender, h.from.Extra)
	}
	// Repeats of the turn now running (held in memory) are said at once; a
	// repeat of a turn older than the window is said when it reaches the
	// head, above, so no waiting turn costs a store read here.
	for len(e.behind) > 0 && e.Window().holds(e.behind[0].a.TurnID) && e.behind[0].stop == nil {
		h := e.behind[0]
		e.behind = e.behind[1:]
		e.Window().sayAgain(h.a, h.origin)
	}
	if len(e.behind) == 0 {
		e.behind = nil
	}
	e.host.WaitingChanged()
}

// ISOTime is the wire form of a time: UTC, milliseconds.
func ISOTime(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Behind is a client's chat/turnStarted waiting behind the running turn,
// as the host stores it so a restart loses none (C-TURN-104).
type Behind struct {
	Action ahp.ChatTurnStarted
	Origin *ahp.ActionOrigin
	Sender string
	// Client is the Host's handle on the client that sent it; not stored.
	Client any
}

// Waiting is what waits beside the state's pending messages, derived for
// the host to store: who set each pending message the chat holds, and the
// turns sent behind the running one (one a client stopped while it waited
// is not kept: it is said and ended when its turn comes).
func (e *Engine) Waiting() (senders map[string]string, behind []Behind) {
	keep := func(id string) {
		if w, ok := e.pending[id]; ok && w.sender != "" {
			if senders == nil {
				senders = make(map[string]string)
			}
			senders[id] = w.sender
		}
	}
	if s := e.st.SteeringMessage; s != nil {
		keep(s.ID)
	}
	for _, q := range e.st.QueuedMessages {
		keep(q.ID)
	}
	for _, h := range e.behind {
		if h.stop == nil {
			behind = append(behind, Behind{Action: h.a, Origin: h.origin, Sender: h.from.Sender})
		}
	}
	return senders, behind
}

// Restore puts back what waited when the chat was stored. It waits until a
// client acts or a turn completes, as after a stop.
func (e *Engine) Restore(senders map[string]string, behind []Behind) {
	for id, s := range senders {
		e.pending[id] = waiting{sender: s}
	}
	for _, b := range behind {
		e.behind = append(e.behind, held{from: From{Client: b.Client, Sender: b.Sender}, origin: b.Origin, a: b.Action})
	}
}

// Drop forgets turn id, which a truncation removed from the chat.
func (e *Engine) Drop(id string) { delete(e.turns, id) }
