package chat

import (
	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// handSteering hands the chat's steering message to the running turn: at
// the turn's start, and again on each of the turn's actions until the
// backend takes it (C-TURN-41, 42). A ! command is never handed: it runs
// as a turn of its own once the running one ends (C-TURN-48).
func (c *Chat) handSteering() {
	e := c.engine()
	s := c.state.SteeringMessage
	t := c.turn
	if s == nil || t == nil || !t.sent || t.conv != c.conv || c.conv == nil || e.handed.id != "" || isCommand(s.Message.Text) {
		return
	}
	switch c.conv.Steer(agent.Steering{ID: s.ID, TurnID: t.id, Text: s.Message.Text}) {
	case agent.SteerTaken:
		e.handed = handedSteering{id: s.ID, turnID: t.id, msg: s.Message}
	case agent.SteerNotYet:
	case agent.SteerUnsupported:
		c.log.Warn("backend refused steering although it declares it", "steering", s.ID)
		c.takeOutSteering(s.ID)
	case agent.SteerRefused:
		c.log.Info("backend would not take steering message; taken out", "steering", s.ID)
		c.takeOutSteering(s.ID)
	}
}

// takeOutSteering says the host's own chat/pendingMessageRemoved for the
// steering message id when the chat holds it.
func (c *Chat) takeOutSteering(id string) {
	if s := c.state.SteeringMessage; s != nil && s.ID == id {
		c.apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: id}, nil)
		delete(c.engine().senders, id)
	}
}

// steeringConsumed: the backend took the steering message into its turn;
// the host takes it out of the chat's pending messages.
func (c *Chat) steeringConsumed(id string) {
	e := c.engine()
	if e.handed.id == id {
		e.handed = handedSteering{}
	}
	c.takeOutSteering(id)
	if c.running() {
		c.handSteering()
	} else {
		c.startNext()
	}
}

// steeringReturned: the backend hands back a steering message unsent. It
// steers the turn running then, or, while nothing runs, runs next
// (C-TURN-43, 44). Handed back by the turn it was meant for before that
// turn's end, it waits for the end.
func (c *Chat) steeringReturned(turnID, id string) {
	e := c.engine()
	if e.handed.id == id {
		e.handed = handedSteering{}
	}
	switch t := c.turn; {
	case t == nil:
		c.startNext()
	case t.id != turnID:
		c.handSteering()
	}
}

// backendTurnStarted: the backend runs a steering message it held as a
// turn of its own (Claude after a stop, C-TURN-75). The turn says the
// message as it was handed, named by its queuedMessageId.
func (c *Chat) backendTurnStarted(ev agent.Event) {
	e := c.engine()
	e.open = append(e.open, ev.TurnID)
	if c.running() {
		c.log.Warn("backend started a turn while another runs", "turn", ev.TurnID)
		return
	}
	var msg ahp.Message
	queued := ""
	switch s := c.state.SteeringMessage; {
	case s != nil && s.ID == ev.SteeringID:
		msg, queued = s.Message, s.ID
	case e.handed.id != "" && e.handed.id == ev.SteeringID:
		msg, queued = e.handed.msg, e.handed.id
	default:
		msg = ahp.Message{Text: ev.Text, Origin: ahp.MessageOrigin{Kind: "user"}}
	}
	sender := e.senders[queued]
	delete(e.senders, queued)
	if e.handed.id == ev.SteeringID {
		e.handed = handedSteering{}
	}
	t := c.say(ahp.ChatTurnStarted{TurnID: ev.TurnID, StartedAt: isoTime(c.cfg.Now()), Message: msg, QueuedMessageID: queued}, nil, sender)
	t.sent = true
	c.persistRunning()
}
