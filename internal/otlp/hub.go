package otlp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	collogspb "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/slim/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The defaults of Options.
const (
	DefaultServiceName   = "ahpd"
	DefaultBufferRecords = 1024
	DefaultBufferBytes   = 1 << 20
	DefaultBatchRecords  = 256
	DefaultLinger        = 20 * time.Millisecond
	DefaultBodyBytes     = 8 << 10
	DefaultValueBytes    = 8 << 10
	DefaultAttrs         = 64
	defaultGroupDepth    = 8
)

// DroppedRecordsKey is the attribute that counts the records a subscriber
// lost, on the record that tells it so.
const DroppedRecordsKey = "ahpd.otlp.dropped_records"

// ScopeName is the instrumentation scope of every record.
const ScopeName = "ahpd"

// Options shape a Hub. Zero values take the defaults.
type Options struct {
	// ServiceName and ServiceVersion are the resource's service.name
	// (DefaultServiceName when empty) and service.version (left out
	// when empty).
	ServiceName    string
	ServiceVersion string
	// BufferRecords and BufferBytes bound what one subscriber holds
	// that its sink has not taken yet; past either, records are lost
	// and counted. A record's bytes are its protobuf size.
	BufferRecords int
	BufferBytes   int
	// BatchRecords is the most records one export carries.
	BatchRecords int
	// Linger is how long a subscriber waits, once a record is there,
	// for more to join the same export (DefaultLinger when zero; no
	// wait when negative).
	Linger time.Duration
	// BodyBytes, ValueBytes and Attrs bound one record: its body, one
	// attribute's string value (both cut, marked "…"), and how many
	// attributes it carries (the rest are counted in
	// droppedAttributesCount).
	BodyBytes  int
	ValueBytes int
	Attrs      int
	// Now is the clock of observed times; time.Now when nil.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	def(&o.BufferRecords, DefaultBufferRecords)
	def(&o.BufferBytes, DefaultBufferBytes)
	def(&o.BatchRecords, DefaultBatchRecords)
	def(&o.BodyBytes, DefaultBodyBytes)
	def(&o.ValueBytes, DefaultValueBytes)
	def(&o.Attrs, DefaultAttrs)
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Sink takes one export of a subscription: params is the whole params
// object of an otlp/exportLogs notification, {"channel", "payload"}. It
// runs on the subscription's own goroutine, one export at a time, so it
// may block; the logger never waits for it, and while it blocks the
// subscription's buffer fills and then loses records. It should return
// soon after ctx ends (the subscription was closed). An error ends the
// subscription (Err reports it). It must not call the subscription's
// Close, which waits for it.
type Sink func(ctx context.Context, params json.RawMessage) error

// Stats counts what a hub did since it was made.
type Stats struct {
	Subscribers int
	Dropped     uint64 // records a subscriber lost to its full buffer
}

// ErrHubClosed is what Subscribe answers after Close.
var ErrHubClosed = errors.New("otlp: hub closed")

// none is Hub.min when nobody subscribes: above every severity.
const none = math.MaxInt32

// Hub fans the host's log records out to its subscribers. Its methods may
// be called from any goroutine.
type Hub struct {
	opts     Options
	lim      limits
	resource *resourcepb.Resource
	scope    *commonpb.InstrumentationScope

	// min is the lowest level of any subscriber, so the logger asks
	// whether anybody wants a record without a lock.
	min atomic.Int32

	dropped atomic.Uint64

	// mu guards subs and closed. publish holds it shared while it
	// offers a record; a subscription's mu is taken inside it.
	mu     sync.RWMutex
	subs   map[*Subscription]struct{}
	closed bool
}

// NewHub makes a hub with no subscribers.
func NewHub(opts Options) *Hub {
	opts = opts.withDefaults()
	h := &Hub{
		opts: opts,
		lim:  limits{body: opts.BodyBytes, value: opts.ValueBytes, attrs: opts.Attrs, groups: defaultGroupDepth},
		subs: make(map[*Subscription]struct{}),
	}
	res := []*commonpb.KeyValue{{Key: "service.name", Value: stringValue(opts.ServiceName)}}
	if opts.ServiceVersion != "" {
		res = append(res, &commonpb.KeyValue{Key: "service.version", Value: stringValue(opts.ServiceVersion)})
	}
	h.resource = &resourcepb.Resource{Attributes: res}
	h.scope = &commonpb.InstrumentationScope{Name: ScopeName, Version: opts.ServiceVersion}
	h.min.Store(none)
	return h
}

// wants reports whether some subscriber takes a record of severity sev.
func (h *Hub) wants(sev logspb.SeverityNumber) bool { return int32(sev) >= h.min.Load() }

// publish offers rec to every subscriber whose level allows it. It never
// blocks: a subscriber with no room loses it. rec is shared between the
// subscribers and must not be changed afterwards.
func (h *Hub) publish(rec *logspb.LogRecord) {
	if rec == nil || !h.wants(rec.SeverityNumber) {
		return
	}
	e := entry{rec: rec, size: proto.Size(rec)}
	h.mu.RLock()
	for s := range h.subs {
		if s.level.Allows(rec.SeverityNumber) {
			s.offer(e)
		}
	}
	h.mu.RUnlock()
}

// Subscribe adds a subscriber that takes the records at level and above
// and hands them to sink in exports on LogsChannel(level), until it is
// closed, its sink fails or the hub closes. The host makes one for each
// client channel subscription.
func (h *Hub) Subscribe(level Level, sink Sink) (*Subscription, error) {
	if !level.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrUnknownLevel, int32(level))
	}
	if sink == nil {
		return nil, errors.New("otlp: subscribe with no sink")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscription{
		hub:     h,
		level:   level,
		channel: LogsChannel(level),
		sink:    sink,
		ctx:     ctx,
		sinkCtx: WithoutExport(ctx),
		cancel:  cancel,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		cancel()
		return nil, ErrHubClosed
	}
	h.subs[s] = struct{}{}
	h.updateMinLocked()
	h.mu.Unlock()
	go s.run()
	return s, nil
}

// Close ends every subscription and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	subs := make([]*Subscription, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}

// Stats is what the hub did so far.
func (h *Hub) Stats() Stats {
	h.mu.RLock()
	n := len(h.subs)
	h.mu.RUnlock()
	return Stats{Subscribers: n, Dropped: h.dropped.Load()}
}

func (h *Hub) remove(s *Subscription) {
	h.mu.Lock()
	delete(h.subs, s)
	h.updateMinLocked()
	h.mu.Unlock()
}

func (h *Hub) updateMinLocked() {
	m := int32(none)
	for s := range h.subs {
		m = min(m, int32(s.level))
	}
	h.min.Store(m)
}

// exportJSON encodes OTLP/JSON as the OTLP specification has it: field
// names in lowerCamelCase, enums (severityNumber) as their numbers, 64-bit
// integers (timeUnixNano, intValue) as decimal strings.
var exportJSON = protojson.MarshalOptions{UseEnumNumbers: true}

// encodeExport is the params of the otlp/exportLogs notification that
// carries batch on channel: an ExportLogsServiceRequest of one resource
// (the daemon) and one scope, the records in the order they were logged.
func (h *Hub) encodeExport(channel string, batch []*logspb.LogRecord) (json.RawMessage, error) {
	payload, err := exportJSON.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  h.resource,
		ScopeLogs: []*logspb.ScopeLogs{{Scope: h.scope, LogRecords: batch}},
	}}})
	if err != nil {
		return nil, fmt.Errorf("otlp: encode export: %w", err)
	}
	// Marshal compacts the payload (protojson varies its spacing).
	return json.Marshal(ExportLogsParams{Channel: channel, Payload: payload})
}

type entry struct {
	rec  *logspb.LogRecord
	size int
}

// Subscription is one subscriber of a hub: a client's subscription to one
// logs channel.
//
// A subscriber whose buffer is full loses records rather than holding up
// the logger or being cut. The channel is diagnostic, stateless and not
// replayed, so a gap is what the protocol already allows for; cutting the
// subscription would leave the client believing it still subscribed, and
// closing the connection would cost it its state channels over its log
// view. So the loss is said instead: from the first record lost the
// subscriber takes nothing more until its sink has taken everything it
// held, and the export that empties it ends with one record, at warn or
// the subscription's level if higher, whose body says "dropped N log
// records" and whose DroppedRecordsKey attribute is N. The gap is exactly
// where that record stands.
type Subscription struct {
	hub     *Hub
	level   Level
	channel string
	sink    Sink
	ctx     context.Context
	sinkCtx context.Context // ctx, marked WithoutExport
	cancel  context.CancelFunc
	wake    chan struct{}
	done    chan struct{}

	lostTotal atomic.Uint64

	// mu guards the buffer, what was lost since it was last emptied, and
	// whether the subscription ended (and why).
	mu     sync.Mutex
	buf    []entry
	bytes  int
	lost   uint64
	closed bool
	err    error
}

// Channel is the canonical channel URI its exports are sent on.
func (s *Subscription) Channel() string { return s.channel }

// Done is closed when the subscription has ended and its sink will not be
// called again.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the subscription ended by itself: its sink's error. It is nil
// while it runs and after Close.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Dropped is how many records this subscriber lost to its full buffer.
func (s *Subscription) Dropped() uint64 { return s.lostTotal.Load() }

// Close unsubscribes: nothing more is offered to it, what it held is
// discarded, and once Close returns its sink is not running and will not
// be called again. It may be called more than once, but not from its
// sink.
func (s *Subscription) Close() {
	s.hub.remove(s)
	s.mu.Lock()
	s.closed = true
	clear(s.buf)
	s.buf, s.bytes = nil, 0
	s.mu.Unlock()
	s.cancel()
	<-s.done
}

// offer queues e, or loses it. It never blocks.
func (s *Subscription) offer(e entry) {
	opts := &s.hub.opts
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.lost > 0 || len(s.buf) >= opts.BufferRecords || s.bytes+e.size > opts.BufferBytes {
		s.loseLocked(1)
	} else {
		s.buf = append(s.buf, e)
		s.bytes += e.size
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loseLocked counts n records lost, for the record that says so and for
// Dropped and the hub's Stats; s.mu is held.
func (s *Subscription) loseLocked(n uint64) {
	s.lost += n
	s.lostTotal.Add(n)
	s.hub.dropped.Add(n)
}

// run is the subscription's goroutine: it waits for records, lets more
// join them for the linger time, and hands them to the sink in batches.
func (s *Subscription) run() {
	defer close(s.done)
	linger := s.hub.opts.Linger
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		}
		if linger > 0 && !s.batchFull() {
			t := time.NewTimer(linger)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		for {
			batch, more := s.take()
			if len(batch) == 0 {
				break
			}
			params, err := s.hub.encodeExport(s.channel, batch)
			if err != nil {
				// Only a bug gets here (strings are made valid
				// UTF-8 before); the batch is lost and said so.
				s.mu.Lock()
				s.loseLocked(uint64(len(batch)))
				s.mu.Unlock()
				continue
			}
			if s.ctx.Err() != nil {
				return
			}
			if err := s.sink(s.sinkCtx, params); err != nil {
				s.fail(err)
				return
			}
			if !more {
				break
			}
		}
	}
}

func (s *Subscription) batchFull() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf) >= s.hub.opts.BatchRecords
}

// take removes the next batch from the buffer; the batch that empties it
// ends with the record of what was lost, if anything was.
func (s *Subscription) take() (batch []*logspb.LogRecord, more bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	n := min(len(s.buf), s.hub.opts.BatchRecords)
	batch = make([]*logspb.LogRecord, 0, n+1)
	for _, e := range s.buf[:n] {
		batch = append(batch, e.rec)
		s.bytes -= e.size
	}
	rest := copy(s.buf, s.buf[n:])
	clear(s.buf[rest:])
	s.buf = s.buf[:rest]
	if rest == 0 && s.lost > 0 {
		batch = append(batch, s.lostRecord(s.lost))
		s.lost = 0
	}
	return batch, rest > 0
}

// lostRecord says n records were lost, at a level the subscriber takes and
// a client filtering defensively keeps.
func (s *Subscription) lostRecord(n uint64) *logspb.LogRecord {
	level := max(LevelWarn, s.level)
	now := unixNano(s.hub.opts.Now())
	return &logspb.LogRecord{
		TimeUnixNano:         now,
		ObservedTimeUnixNano: now,
		SeverityNumber:       level.Severity(),
		SeverityText:         level.String(),
		Body: stringValue(fmt.Sprintf("dropped %d log records: this subscriber's buffer (%d records, %d bytes) was full",
			n, s.hub.opts.BufferRecords, s.hub.opts.BufferBytes)),
		Attributes: []*commonpb.KeyValue{{
			Key:   DroppedRecordsKey,
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(min(n, math.MaxInt64))}},
		}},
	}
}

// fail ends the subscription because its sink failed.
func (s *Subscription) fail(err error) {
	s.hub.remove(s)
	s.mu.Lock()
	if !s.closed {
		s.err = err
	}
	s.closed = true
	clear(s.buf)
	s.buf, s.bytes = nil, 0
	s.mu.Unlock()
	s.cancel()
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	ns := t.UnixNano()
	if ns < 0 {
		return 0
	}
	return uint64(ns)
}
