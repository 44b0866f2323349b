package turns

import (
	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// handSteering hands the chat's steering message to the running turn: at
// the turn's start, and again on each of the turn's actions until the
// backend takes it (C-TURN-41, 42). Only a message of the turn's own route
// is handed, to a backend that steers: a ! command runs as a turn of its
// own once the running one ends (C-TURN-48).
func (e *Engine) handSteering() {
	s := e.st.SteeringMessage
	t := e.active
	if s == nil || t == nil || !t.Sent || t.Conv == nil || !t.Caps.Steering || e.handed.id != "" || RouteOf(s.Message.Text) != t.Route {
		return
	}
	switch t.Conv.Steer(agent.Steering{ID: s.ID, TurnID: t.ID, Text: s.Message.Text}) {
	case agent.SteerTaken:
		e.handed = handed{id: s.ID, turnID: t.ID, msg: s.Message, sender: e.pending[s.ID].sender, conv: t.Conv}
	case agent.SteerNotYet:
	case agent.SteerUnsupported:
		e.host.Warn("backend refused steering although it declares it", "steering", s.ID)
		e.takeOutSteering(s.ID)
	case agent.SteerRefused:
		e.host.Warn("backend would not take steering message; taken out", "steering", s.ID)
		e.takeOutSteering(s.ID)
	}
}

// takeOutSteering says the host's own chat/pendingMessageRemoved for the
// steering message id when the chat holds it.
func (e *Engine) takeOutSteering(id string) {
	if s := e.st.SteeringMessage; s != nil && s.ID == id {
		e.Apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: id}, nil)
		delete(e.pending, id)
	}
}

// steeringConsumed: the backend took the steering message into its turn;
// the host takes it out of the chat's pending messages.
func (e *Engine) steeringConsumed(id string) {
	if e.handed.id == id {
		e.handed = handed{}
	}
	e.takeOutSteering(id)
	if e.Running() {
		e.handSteering()
	} else {
		e.startNext()
	}
}

// steeringReturned: the backend hands back a steering message unsent. It
// steers the turn running then, or, while nothing runs, runs next
// (C-TURN-43, 44). Handed back by the turn it was meant for before that
// turn's end, it waits for the end.
func (e *Engine) steeringReturned(turnID, id string) {
	if e.handed.id == id {
		e.handed = handed{}
	}
	switch t := e.active; {
	case t == nil:
		e.startNext()
	case t.ID != turnID:
		e.handSteering()
	}
}

// backendTurnStarted: the backend runs a steering message it held as a
// turn of its own (Claude after a stop, C-TURN-75). The turn says the
// message as it was handed, named by its queuedMessageId.
func (e *Engine) backendTurnStarted(conv agent.Conversation, ev agent.Event) {
	e.open = append(e.open, openTurn{conv: conv, id: ev.TurnID})
	if e.Running() {
		e.host.Warn("backend started a turn while another runs", "turn", ev.TurnID)
		return
	}
	var msg ahp.Message
	queued := ""
	switch s := e.st.SteeringMessage; {
	case s != nil && s.ID == ev.SteeringID:
		msg, queued = s.Message, s.ID
	case e.handed.id != "" && e.handed.id == ev.SteeringID:
		msg, queued = e.handed.msg, e.handed.id
	default:
		msg = ahp.Message{Text: ev.Text, Origin: ahp.MessageOrigin{Kind: "user"}}
	}
	sender := e.pending[queued].sender
	if sender == "" && queued != "" && queued == e.handed.id {
		// Taken out of the chat at the stop: the backend still says who
		// sent it (C-TURN-04).
		sender = e.handed.sender
	}
	delete(e.pending, queued)
	if e.handed.id == ev.SteeringID {
		e.handed = handed{}
	}
	t := e.say(ahp.ChatTurnStarted{TurnID: ev.TurnID, StartedAt: ISOTime(e.host.Now()), Message: msg, QueuedMessageID: queued}, nil, sender)
	t.Sent, t.Conv, t.Caps = true, conv, e.caps
}

// Begin opens a turn the backend behind conv runs on its own and that no
// client sent: a worker chat's turn, whose prompt the parent agent wrote
// (C-SUB-08). It returns the turn's id, or "" when a turn runs already.
func (e *Engine) Begin(conv agent.Conversation, caps agent.Capabilities, msg ahp.Message) string {
	if e.Running() {
		return ""
	}
	t := e.say(ahp.ChatTurnStarted{TurnID: e.host.NewID(), StartedAt: ISOTime(e.host.Now()), Message: msg}, nil, "")
	t.Sent, t.Conv, t.Caps = true, conv, caps
	return t.ID
}
