package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/rpc"
	"github.com/ahpd/ahpd/internal/session"
)

// dispatcher routes a client's actions (dispatchAction) to the owner of
// their channel: the root desk, a terminal, a session's actor or a chat's.
// A dispatch never waits on the read loop: one to a loaded chat with
// nothing routed ahead is one push into its mailbox, anything that may
// wait goes through the channel's lane (lanes.go).
type dispatcher struct {
	log      *slog.Logger
	bus      *bus.Bus
	lanes    *lanes
	actors   *actors
	root     *rootDesk
	cat      *catalogue
	sessions *sessionDesk
	attach   *attacher
	own      ownChannels
	autos    *automationDesk
	git      *gitDesk
}

// dispatch routes a client action to the owner of its channel. It is
// a notification: what cannot be taken comes back as a refusal envelope.
// attachments is the data of the inline attachments of the message the
// action carries, which params leave out (rpc.AttachmentData); a refusal
// before they are written says the action without them.
func (d *dispatcher) dispatch(cl *client, params json.RawMessage, attachments rpc.AttachmentData) {
	p, a, err := decodeDispatch(params)
	origin := &ahp.ActionOrigin{ClientID: cl.ClientID(), ClientSeq: p.ClientSeq}
	if err != nil {
		// A malformed notification has no reply to carry an error, so the
		// refusal envelope names what was wrong (on the channel it named,
		// if any).
		d.log.Info("refused malformed dispatchAction", "conn", cl.conn.ID(), "err", err)
		if a == nil {
			a = ahp.UnknownAction{Type: "", Raw: rawOrNull(p.Action)}
		}
		d.bus.Refuse(cl, p.Channel, a, origin, err.Error())
		return
	}
	if !cl.ready() {
		d.bus.Refuse(cl, p.Channel, a, origin, "dispatchAction before initialize")
		return
	}
	if d.own.dispatch(cl, p.Channel, a, origin) { // a terminal or a resource watch
		return
	}
	if ahp.IsAutomationsURI(p.Channel) || ahp.IsAutomationRunURI(p.Channel) {
		if !automationChannelTakes(p.Channel, a.ActionType()) {
			d.bus.Refuse(cl, p.Channel, a, origin, fmt.Sprintf("%s is not an action of channel %s.", a.ActionType(), p.Channel))
			return
		}
		// Every change to the catalogue and its runs is made on the
		// catalogue's lane, one at a time (automations.go).
		d.route(cl, ahp.AutomationsURI, a, origin, func() { d.autos.dispatch(context.Background(), cl, p.Channel, a, origin) })
		return
	}
	if ch, ok := changeset.ParseSessionChannel(p.Channel); ok {
		// A git session's changeset takes a review mark, stored off the
		// read loop (gitchangesets.go).
		d.route(cl, p.Channel, a, origin, func() { d.git.dispatch(cl, p.Channel, ch, a, origin) })
		return
	}
	if reason := channelRefuses(p.Channel, a.ActionType()); reason != "" {
		d.bus.Refuse(cl, p.Channel, a, origin, reason)
		return
	}
	a = d.attach.writeInline(cl, d.attachmentSession(p.Channel), a, attachments) // attachments.go
	ctx := context.Background()
	switch {
	case canvas.Is(p.Channel):
		// Every canvas action is the host's own (C-CANV-11).
		d.bus.Refuse(cl, p.Channel, a, origin, "Action is not client-dispatchable.")
	case ahp.IsRootURI(p.Channel):
		if _, ok := a.(ahp.RootConfigChanged); !ok || !ahp.IsClientDispatchable(a.ActionType()) {
			d.bus.Refuse(cl, p.Channel, a, origin, "Action is not client-dispatchable.")
			return
		}
		if g := ahp.GrantFor(a.ActionType()); g != "" && !cl.principal.Can(g) {
			d.bus.Refuse(cl, p.Channel, a, origin, fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), g))
			return
		}
		if rc, _ := a.(ahp.RootConfigChanged); touchesGates(rc) {
			// The automation gates are stored before the change is told.
			d.route(cl, ahp.AutomationsURI, a, origin, func() { d.autos.configure(context.Background(), cl, rc, origin) })
			return
		}
		d.root.apply(a, origin)
	case ahp.IsChatURI(p.Channel):
		// A loaded chat with nothing routed ahead: one push into its
		// mailbox. Anything that may wait (loading the chat, reading the
		// chats a message attaches) goes through the channel's lane, never
		// on this read loop.
		if c := d.actors.live(p.Channel); c != nil && !d.attach.carriesChat(a) && d.lanes.idle(p.Channel) {
			err := c.Dispatch(cl.chatClient(), p.ClientSeq, a)
			if err == nil {
				return
			}
			if !errors.Is(err, chat.ErrClosed) {
				d.bus.Refuse(cl, p.Channel, a, origin, err.Error())
				return
			}
		}
		d.route(cl, p.Channel, a, origin, func() {
			ctx, cancel := context.WithTimeout(ctx, routeWait)
			defer cancel()
			cc := d.attach.clientFor(ctx, cl, a) // attachments.go
			err := d.sessions.onChat(ctx, p.Channel, func(c *chat.Chat) error { return c.Dispatch(cc, p.ClientSeq, a) })
			if err != nil {
				d.bus.Refuse(cl, p.Channel, a, origin, err.Error())
			}
		})
	default:
		if !d.lanes.idle(p.Channel) || !d.sessionOpen(p.Channel) {
			// A request on this channel (a subscribe, a createChat) is
			// still on its lane: the action goes behind it, in the order
			// the client sent them. A stored session that is not open
			// opens there too, off this read loop.
			d.route(cl, p.Channel, a, origin, func() { d.toSession(cl, p, a, origin) })
			return
		}
		d.toSession(cl, p, a, origin)
	}
}

// attachmentSession is the session whose attachments folder a message
// dispatched on channel is written to: a chat's session, or the session a
// chat action names for its default chat; "" when the host holds neither.
func (d *dispatcher) attachmentSession(channel string) string {
	if ahp.IsChatURI(channel) {
		if session, _, ok := d.cat.chatSession(channel); ok {
			return session
		}
		// A URI that names its session (VS Code's derived default chat).
		if pc, err := ahp.ParseChatURI(channel); err == nil && pc.Session != "" && d.cat.known(pc.Session) {
			return pc.Session
		}
		return ""
	}
	if d.cat.known(channel) {
		return channel
	}
	return ""
}

// sessionOpen reports whether an action on channel can be handed over
// from the read loop without a wait: the channel is a session's whose
// actor is open (or a session the host does not hold: the refusal needs no
// store). An annotations channel always goes through its lane.
func (d *dispatcher) sessionOpen(channel string) bool {
	if _, ok := ahp.AnnotationsSession(channel); ok {
		return false
	}
	_, open := d.cat.session(channel)
	return open || !d.cat.known(channel)
}

// toSession hands an action on a session or annotations channel to
// the session's actor (a chat action goes on to its default chat),
// opening a stored session that is not open.
func (d *dispatcher) toSession(cl *client, p ahp.DispatchActionParams, a ahp.Action, origin *ahp.ActionOrigin) {
	ctx := context.Background()
	if sess, ok := ahp.AnnotationsSession(p.Channel); ok {
		found, err := d.cat.onSession(ctx, sess, func(s *session.Session) error {
			return s.DispatchAnnotations(cl.chatClient(), p.ClientSeq, a)
		})
		switch {
		case !found:
			d.bus.Refuse(cl, p.Channel, a, origin, fmt.Sprintf("%s: %s", ahp.ErrResourceNotFound.Message, p.Channel))
		case err != nil:
			d.bus.Refuse(cl, p.Channel, a, origin, err.Error())
		}
		return
	}
	s, ok := d.cat.live(ctx, p.Channel)
	if !ok {
		d.bus.Refuse(cl, p.Channel, a, origin, fmt.Sprintf("%s: %s", ahp.ErrResourceNotFound.Message, p.Channel))
		return
	}
	if strings.HasPrefix(a.ActionType(), "chat/") {
		// C-FIRST-11: a chat action on a session names no chat: it
		// goes to the chat the session's defaultChat names. It takes
		// that chat's lane, so it keeps its order among the actions
		// sent to the chat by its own URI.
		d.route(cl, d.defaultChatLane(p.Channel), a, origin, func() {
			ctx, cancel := context.WithTimeout(ctx, routeWait)
			defer cancel()
			d.toDefaultChat(ctx, cl, p, a, origin)
		})
		return
	}
	err := s.Dispatch(cl.chatClient(), p.ClientSeq, a)
	if errors.Is(err, session.ErrClosed) {
		// It unloaded after it was found: it opens again on the
		// channel's lane (this may be the read loop).
		d.route(cl, p.Channel, a, origin, func() { d.toSession(cl, p, a, origin) })
		return
	}
	if err != nil {
		d.bus.Refuse(cl, p.Channel, a, origin, err.Error())
	}
}

// toDefaultChat hands a chat action sent to a session to its default
// chat. The session is found again here: it may have unloaded since the
// read loop saw it.
func (d *dispatcher) toDefaultChat(ctx context.Context, cl *client, p ahp.DispatchActionParams, a ahp.Action, origin *ahp.ActionOrigin) {
	var def string
	found, err := d.cat.onSession(ctx, p.Channel, func(s *session.Session) (err error) {
		def, err = s.DefaultChat(ctx)
		return err
	})
	if !found && err == nil {
		err = fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, p.Channel)
	}
	if err == nil && def == "" {
		err = fmt.Errorf("session %s has no default chat", p.Channel)
	}
	if err == nil {
		cc := d.attach.clientFor(ctx, cl, a) // attachments.go
		err = d.sessions.onChat(ctx, def, func(c *chat.Chat) error { return c.Dispatch(cc, p.ClientSeq, a) })
	}
	if err != nil {
		d.bus.Refuse(cl, p.Channel, a, origin, err.Error())
	}
}

// channelRefuses says why a channel does not take an action of this type
// ("" when it does): an action is its subject's, so a terminal, changeset
// or annotations action never reaches a chat or a session, whose reducers
// would pass it on to every watcher unchanged. A session takes its own
// actions and chat actions meant for its default chat (C-FIRST-11).
func channelRefuses(channel, actionType string) string {
	subject, _, _ := strings.Cut(actionType, "/")
	var takes []string
	switch {
	case ahp.IsRootURI(channel):
		takes = []string{"root"}
	case ahp.IsChatURI(channel):
		takes = []string{"chat"}
	case isAnnotations(channel):
		takes = []string{"annotations"}
	case canvas.Is(channel):
		takes = []string{"canvas"}
	default:
		takes = []string{"session", "chat"}
	}
	if ahp.IsChatURI(channel) && actionType == "session/titleChanged" {
		return "" // a client renames that one chat (C-COMP-25)
	}
	if slices.Contains(takes, subject) {
		return ""
	}
	return fmt.Sprintf("%s is not an action of channel %s.", actionType, channel)
}

// defaultChatLane is the lane of the chat the session last said is its
// default (its summary's defaultChat), or the session's own when it named
// none yet. The session still decides where the action goes.
func (d *dispatcher) defaultChatLane(session string) string {
	if def := d.cat.defaultChat(session); def != "" {
		return def
	}
	return session
}

// routeWait bounds how long a routed action waits for its chat to load (an
// unloading chat's agent ends first); past it the action is refused.
const routeWait = time.Minute

// route runs fn on channel's lane, or refuses a when the lanes are full.
func (d *dispatcher) route(cl *client, channel string, a ahp.Action, origin *ahp.ActionOrigin, fn func()) {
	if !d.lanes.push(channel, fn) {
		d.log.Warn("dispatch lanes full; refusing", "channel", channel, "conn", cl.conn.ID())
		d.bus.Refuse(cl, channel, a, origin, "Too many actions wait for this channel; send it again later.")
	}
}

// decodeDispatch reads dispatchAction's params. On an error it returns what
// it could read, for the refusal envelope.
func decodeDispatch(params json.RawMessage) (ahp.DispatchActionParams, ahp.Action, error) {
	var raw struct {
		Channel   json.RawMessage `json:"channel"`
		ClientSeq json.RawMessage `json:"clientSeq"`
		Action    json.RawMessage `json:"action"`
	}
	var p ahp.DispatchActionParams
	if err := decodeParams(params, &raw); err != nil {
		return p, nil, err
	}
	p.Action = raw.Action
	if err := json.Unmarshal(raw.Channel, &p.Channel); err != nil || p.Channel == "" {
		return p, nil, errors.New("params.channel: required, a channel URI")
	}
	seq, seqErr := ahp.ParseClientSeq(raw.ClientSeq)
	p.ClientSeq = seq
	a, err := ahp.DecodeAction(p.Action)
	if seqErr != nil {
		return p, a, seqErr
	}
	if err == nil {
		// A field AHP requires is missing: refused whole, never repaired.
		err = ahp.CheckClientAction(a.ActionType(), p.Action)
	}
	return p, a, err
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}
