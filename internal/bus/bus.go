// Package bus assigns serverSeq, keeps the replay log and fans action
// envelopes out to the connections that subscribe to each channel. Every
// owner of a channel (host, session and chat actors) publishes through it.
package bus

import (
	"encoding/json"
	"strconv"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/lockorder"
)

// Subscriber is what the bus delivers to: one client connection.
type Subscriber interface {
	// Deliver queues one pre-marshalled notification; it never blocks.
	Deliver(method string, params json.RawMessage)
	// Knows reports whether the connection's protocol version knows the
	// action type (canvas actions need 0.10.0, AHP-1.0.md §11).
	Knows(actionType string) bool
	ClientID() string
}

// ActionSubscriber is a Subscriber that is handed each published action
// with its envelope, rather than the envelope alone, so it may hold and
// merge streaming deltas for a connection that accepts some latency
// (subscribe's delivery.maxLatencyMs; host/coalesce.go). It is called
// under the bus's lock, in serverSeq order, and must not block or call
// the bus. fromClient is set when the action carries a client's origin.
// frame is the whole JSON-RPC "action" notification carrying envelope,
// built once per publish and shared by every subscriber: it must not be
// modified.
type ActionSubscriber interface {
	Subscriber
	DeliverAction(channel string, action ahp.Action, seq int64, envelope json.RawMessage, frame []byte, fromClient bool)
}

// actionFrameHead opens the JSON-RPC notification an envelope travels in.
const actionFrameHead = `{"jsonrpc":"2.0","method":"action","params":`

// Envelope is the JSON of an action envelope with no origin: what a
// coalescing subscriber sends for deltas it merged.
func Envelope(channel string, action ahp.Action, seq int64) json.RawMessage {
	return newEnvelope(channel, action, nil, "").stamp(seq)
}

// SubscribeWatcher is a Subscriber that is told the moment it is
// subscribed to a channel (Subscribe, Replay), under the bus's lock: the
// moment the owner takes the snapshot the subscriber's reply will carry.
// It must not block or call the bus. The host's connections use it to hold
// what follows a snapshot behind the reply that carries it (host/client.go).
type SubscribeWatcher interface {
	Subscribed(channel string)
}

// logEntry is one envelope kept for reconnect.
type logEntry struct {
	seq     int64
	channel string
	// onlyClient is set on a refusal: it was sent to that client alone.
	onlyClient string
	// actionType is the envelope's action type, for the subscriber's
	// version filter on replay.
	actionType string
	envelope   json.RawMessage
}

// Bus assigns serverSeq, keeps the replay log and fans envelopes out to the
// Subscribers of each channel.
//
// Every owner (the host for root, session and chat actors for theirs)
// publishes through Publish after applying the action to its state. Taking
// the sequence number, appending to the log and queueing to every
// Subscriber happen under seqMu as one step, so every connection receives
// envelopes in strictly increasing serverSeq. Queueing never blocks: a
// connection that cannot keep up is cut by its own outbox.
type Bus struct {
	// seqMu guards seq, log, logHead, logBytes and subs.
	seqMu lockorder.Mutex // rank lockorder.Bus
	seq   int64
	// log holds the newest envelopes from logHead on, oldest first: at most
	// logCap of them and logMaxBytes of envelope bytes (logBytes now), so a
	// burst of large turns cannot make the log hold gigabytes.
	log         []logEntry
	logHead     int
	logCap      int
	logBytes    int
	logMaxBytes int
	subs        map[string]map[Subscriber]struct{}
	// observe, when set (Observe), is told of every published action.
	observe func(channel string, action ahp.Action, delivered int)
}

// DefaultReplayBytes bounds the replay log's envelope bytes.
const DefaultReplayBytes = 64 << 20

// NewBus returns a bus whose replay log keeps the newest logCap envelopes
// (and at most DefaultReplayBytes of them).
func NewBus(logCap int) *Bus {
	if logCap <= 0 {
		logCap = 4096
	}
	return &Bus{seqMu: lockorder.Mutex{Rank: lockorder.Bus}, logCap: logCap, logMaxBytes: DefaultReplayBytes, subs: make(map[string]map[Subscriber]struct{})}
}

// Seq is the newest serverSeq handed out.
func (b *Bus) Seq() int64 {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	return b.seq
}

// envelope is an action envelope marshalled up to its serverSeq: the
// expensive part (the action) is encoded before seqMu is taken, and stamp
// only splices the number in under it, so one chat's big action never
// holds up every other chat's publishing.
type envelope struct {
	head, tail []byte
}

func newEnvelope(channel string, action ahp.Action, origin *ahp.ActionOrigin, rejection string) envelope {
	ch, err := json.Marshal(channel)
	if err != nil {
		panic("marshal envelope channel: " + err.Error())
	}
	act, err := marshalAction(action)
	if err != nil {
		// An action we built or decoded ourselves failed to marshal: a
		// bug, never input.
		panic("marshal envelope action: " + err.Error())
	}
	head := make([]byte, 0, len(ch)+len(act)+48)
	head = append(head, `{"channel":`...)
	head = append(head, ch...)
	head = append(head, `,"action":`...)
	head = append(head, act...)
	head = append(head, `,"serverSeq":`...)
	var tail []byte
	if origin != nil {
		o, _ := json.Marshal(origin)
		tail = append(append(tail, `,"origin":`...), o...)
	}
	if rejection != "" {
		r, _ := json.Marshal(rejection)
		tail = append(append(tail, `,"rejectionReason":`...), r...)
	}
	return envelope{head: head, tail: append(tail, '}')}
}

// marshalAction is json.Marshal(a) without its second pass: json.Marshal
// validates and compacts what a MarshalJSON returns, and a known action's
// MarshalJSON returns json.Marshal's own output with its type spliced in,
// compact and escaped already (TestMarshalActionIsJSONMarshal). An
// unknown action's bytes are a client's, and take the whole pass.
func marshalAction(a ahp.Action) ([]byte, error) {
	if m, ok := a.(json.Marshaler); ok {
		if _, unknown := a.(ahp.UnknownAction); !unknown {
			return m.MarshalJSON()
		}
	}
	return json.Marshal(a)
}

// stamp returns the envelope's JSON with serverSeq seq.
func (e envelope) stamp(seq int64) json.RawMessage {
	out := make([]byte, 0, len(e.head)+20+len(e.tail))
	out = append(out, e.head...)
	out = strconv.AppendInt(out, seq, 10)
	return append(out, e.tail...)
}

// stampFrame returns the action notification carrying the envelope with
// serverSeq seq, and the envelope itself (a slice of the frame).
func (e envelope) stampFrame(seq int64) (frame []byte, raw json.RawMessage) {
	out := make([]byte, 0, len(actionFrameHead)+len(e.head)+20+len(e.tail)+1)
	out = append(out, actionFrameHead...)
	out = append(out, e.head...)
	out = strconv.AppendInt(out, seq, 10)
	out = append(out, e.tail...)
	out = append(out, '}')
	return out, out[len(actionFrameHead) : len(out)-1 : len(out)-1]
}

// Publish stamps the next serverSeq on the action and sends it to every
// Subscriber of channel that knows its type. Refusals go through Refuse.
func (b *Bus) Publish(channel string, action ahp.Action, origin *ahp.ActionOrigin) int64 {
	env := newEnvelope(channel, action, origin, "")
	typ := action.ActionType()
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	b.seq++
	frame, raw := env.stampFrame(b.seq)
	b.appendLog(logEntry{seq: b.seq, channel: channel, actionType: typ, envelope: raw})
	delivered := 0
	for s := range b.subs[channel] {
		if s.Knows(typ) {
			if as, ok := s.(ActionSubscriber); ok {
				as.DeliverAction(channel, action, b.seq, raw, frame, origin != nil)
			} else {
				s.Deliver("action", raw)
			}
			delivered++
		}
	}
	if b.observe != nil {
		b.observe(channel, action, delivered)
	}
	return b.seq
}

// Refuse answers a client's action with a refusal sent to that client
// only, also when it is not subscribed to the channel.
func (b *Bus) Refuse(to Subscriber, channel string, action ahp.Action, origin *ahp.ActionOrigin, reason string) int64 {
	env := newEnvelope(channel, action, origin, reason)
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	b.seq++
	raw := env.stamp(b.seq)
	b.appendLog(logEntry{seq: b.seq, channel: channel, onlyClient: to.ClientID(), envelope: raw})
	to.Deliver("action", raw)
	return b.seq
}

func (b *Bus) appendLog(e logEntry) {
	b.log = append(b.log, e)
	b.logBytes += len(e.envelope)
	for len(b.log)-b.logHead > 1 && (len(b.log)-b.logHead > b.logCap || b.logBytes > b.logMaxBytes) {
		b.logBytes -= len(b.log[b.logHead].envelope)
		b.log[b.logHead] = logEntry{}
		b.logHead++
	}
	if b.logHead > len(b.log)/2 && b.logHead > 64 {
		// Compact: the dropped half is reused rather than grown past.
		n := copy(b.log, b.log[b.logHead:])
		clear(b.log[n:])
		b.log = b.log[:n]
		b.logHead = 0
	}
}

// Notify sends a protocol notification (root/sessionAdded, ...) to the
// Subscribers of channel. Notifications carry no serverSeq and are never
// replayed.
func (b *Bus) Notify(channel, method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		panic("marshal notification: " + err.Error())
	}
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	for s := range b.subs[channel] {
		s.Deliver(method, raw)
	}
}

// NotifyEach is Notify with params chosen per subscriber (a summary without
// the fields an older protocol version does not know); nil skips that
// subscriber. Each distinct params value is marshalled once.
func (b *Bus) NotifyEach(channel, method string, params func(Subscriber) any) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	cache := make(map[any]json.RawMessage, 2)
	for s := range b.subs[channel] {
		p := params(s)
		if p == nil {
			continue
		}
		raw, ok := cache[p]
		if !ok {
			var err error
			if raw, err = json.Marshal(p); err != nil {
				panic("marshal notification: " + err.Error())
			}
			cache[p] = raw
		}
		s.Deliver(method, raw)
	}
}

// Subscribe adds s to channel and returns the serverSeq the caller's
// snapshot must be taken at. The caller is the channel's owner, inside its
// own loop, so nothing is published on channel between the snapshot and
// the subscription (C-TURN-123, C-TURN-124).
func (b *Bus) Subscribe(s Subscriber, channel string) int64 {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	b.subscribeLocked(s, channel)
	return b.seq
}

func (b *Bus) subscribeLocked(s Subscriber, channel string) {
	m := b.subs[channel]
	if m == nil {
		m = make(map[Subscriber]struct{})
		b.subs[channel] = m
	}
	m[s] = struct{}{}
	if w, ok := s.(SubscribeWatcher); ok {
		w.Subscribed(channel)
	}
}

// Unsubscribe removes s from channel.
func (b *Bus) Unsubscribe(s Subscriber, channel string) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	if m := b.subs[channel]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(b.subs, channel)
		}
	}
}

// Subscribers counts the watchers of channel.
func (b *Bus) Subscribers(channel string) int {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	return len(b.subs[channel])
}

// DropChannel forgets every subscription to channel (a disposed chat).
func (b *Bus) DropChannel(channel string) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	delete(b.subs, channel)
}

// DropSubscriber removes s from every channel.
func (b *Bus) DropSubscriber(s Subscriber) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	for ch, m := range b.subs {
		delete(m, s)
		if len(m) == 0 {
			delete(b.subs, ch)
		}
	}
}

// Replay returns, for a client that last saw serverSeq after, every
// envelope since then on the given channels, and subscribes it to those
// channels in the same step so nothing falls between the replay and the
// live stream. ok is false when the log no longer reaches back to after:
// the caller answers with snapshots instead.
func (b *Bus) Replay(s Subscriber, after int64, channels []string) (envelopes []json.RawMessage, ok bool) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	if after > b.seq {
		return nil, false
	}
	if after < b.seq {
		if len(b.log) == b.logHead || b.log[b.logHead].seq > after+1 {
			return nil, false
		}
	}
	want := make(map[string]bool, len(channels))
	for _, ch := range channels {
		want[ch] = true
	}
	for _, e := range b.log[b.logHead:] {
		if e.seq <= after || !want[e.channel] {
			continue
		}
		if e.onlyClient != "" && e.onlyClient != s.ClientID() {
			continue
		}
		if e.actionType != "" && !s.Knows(e.actionType) {
			continue // the same filter as Publish: the version never heard of it
		}
		envelopes = append(envelopes, e.envelope)
	}
	for _, ch := range channels {
		b.subscribeLocked(s, ch)
	}
	return envelopes, true
}
