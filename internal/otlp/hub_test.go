package otlp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/slogtest"
	"time"

	collogspb "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// export is one otlp/exportLogs a test sink took, decoded back into the
// OTLP proto types.
type export struct {
	channel string
	raw     json.RawMessage // the params as sent
	req     *collogspb.ExportLogsServiceRequest
}

func (e export) records() []*logspb.LogRecord {
	var out []*logspb.LogRecord
	for _, rl := range e.req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			out = append(out, sl.LogRecords...)
		}
	}
	return out
}

// recorder is a sink that decodes what it takes and hands it on.
type recorder struct {
	t   *testing.T
	out chan export
}

func newRecorder(t *testing.T) *recorder { return &recorder{t: t, out: make(chan export, 1024)} }

func (r *recorder) sink(ctx context.Context, params json.RawMessage) error {
	e, err := decodeExport(params)
	if err != nil {
		r.t.Errorf("export does not decode: %v\n%s", err, params)
		return err
	}
	select {
	case r.out <- e:
	case <-ctx.Done():
	}
	return nil
}

func decodeExport(params json.RawMessage) (export, error) {
	var p ExportLogsParams
	if err := json.Unmarshal(params, &p); err != nil {
		return export{}, err
	}
	req := &collogspb.ExportLogsServiceRequest{}
	if err := protojson.Unmarshal(p.Payload, req); err != nil {
		return export{}, err
	}
	return export{channel: p.Channel, raw: append(json.RawMessage(nil), params...), req: req}, nil
}

// bodies waits until n records came (across exports) and returns their
// bodies; it fails the test past the deadline.
func (r *recorder) bodies(n int) ([]string, []export) {
	r.t.Helper()
	var got []string
	var exports []export
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case e := <-r.out:
			exports = append(exports, e)
			for _, rec := range e.records() {
				got = append(got, rec.Body.GetStringValue())
			}
		case <-deadline:
			r.t.Fatalf("waited for %d records, got %d: %q", n, len(got), got)
		}
	}
	return got, exports
}

// quiet asserts nothing more comes for a while.
func (r *recorder) quiet(d time.Duration) {
	r.t.Helper()
	select {
	case e := <-r.out:
		r.t.Fatalf("an export came: %s", e.raw)
	case <-time.After(d):
	}
}

func mustSubscribe(t *testing.T, h *Hub, l Level, sink Sink) *Subscription {
	t.Helper()
	s, err := h.Subscribe(l, sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestFanOutByLevel: records at every level, logged through the tee, reach
// two subscribers at different levels each at its level and above, on its
// canonical channel, as OTLP/JSON that decodes back into the proto types;
// the daemon's own handler still writes what it did before, and only
// that.
func TestFanOutByLevel(t *testing.T) {
	hub := NewHub(Options{ServiceVersion: "1.2.3", Linger: -1})
	var out bytes.Buffer
	base := slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})
	log := slog.New(NewHandler(base, hub))

	traceRec, warnRec := newRecorder(t), newRecorder(t)
	mustSubscribe(t, hub, LevelTrace, traceRec.sink)
	mustSubscribe(t, hub, LevelWarn, warnRec.sink)

	log.Log(context.Background(), LevelTrace.Slog(), "t1")
	log.Debug("d1", "n", 1)
	log.Info("i1")
	log.Warn("w1", "chat", "ahp-chat:/x")
	log.Error("e1", "err", errors.New("boom"))
	log.Log(context.Background(), LevelFatal.Slog(), "f1")

	got, traceExports := traceRec.bodies(6)
	if want := []string{"t1", "d1", "i1", "w1", "e1", "f1"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("trace subscriber got %q, want %q", got, want)
	}
	got, warnExports := warnRec.bodies(3)
	if want := []string{"w1", "e1", "f1"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("warn subscriber got %q, want %q", got, want)
	}
	warnRec.quiet(50 * time.Millisecond)

	for _, e := range traceExports {
		if e.channel != "ahp-otlp://logs/trace" {
			t.Errorf("trace export on %q", e.channel)
		}
	}
	for _, e := range warnExports {
		if e.channel != "ahp-otlp://logs/warn" {
			t.Errorf("warn export on %q", e.channel)
		}
		for _, rec := range e.records() {
			if rec.SeverityNumber < logspb.SeverityNumber_SEVERITY_NUMBER_WARN {
				t.Errorf("warn subscriber got severity %d", rec.SeverityNumber)
			}
		}
	}

	// The daemon's handler wrote info and above, as before the tee.
	for _, want := range []string{"msg=i1", "msg=w1", "msg=e1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the daemon's log lacks %s:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "msg=d1") || strings.Contains(out.String(), "msg=t1") {
		t.Errorf("the daemon's log has records below its level:\n%s", out.String())
	}

	// The shape: one resource (service.name, service.version), one
	// scope, records with their severity, name, body and attributes.
	e := warnExports[0]
	rl := e.req.ResourceLogs[0]
	if got := formatAttrs(rl.Resource.Attributes); got != `service.name="ahpd" service.version="1.2.3"` {
		t.Errorf("resource %s", got)
	}
	if sl := rl.ScopeLogs[0]; sl.Scope.GetName() != "ahpd" {
		t.Errorf("scope %v", sl.Scope)
	}
	first := e.records()[0]
	if first.SeverityNumber != 13 || first.SeverityText != "warn" || first.TimeUnixNano == 0 || first.ObservedTimeUnixNano == 0 ||
		formatAttrs(first.Attributes) != `chat="ahp-chat:/x"` {
		t.Errorf("record %v", first)
	}
}

// TestNoSubscriberCostsNothing: every record the daemon logs goes through
// the tee, so with nobody subscribed, or nobody at the record's level, it
// adds no allocation (and takes no lock) to a record the daemon's own
// handler drops, and does not enable it.
func TestNoSubscriberCostsNothing(t *testing.T) {
	hub := NewHub(Options{})
	h := NewHandler(slog.DiscardHandler, hub)
	log := slog.New(h).With("conn", "c1")
	ctx := context.Background()
	r := slog.NewRecord(time.Now(), slog.LevelError, "request failed", 0)
	check := func(when string) {
		t.Helper()
		if h.Enabled(ctx, slog.LevelError) {
			t.Errorf("%s: an error record is enabled with nobody to take it", when)
		}
		if n := testing.AllocsPerRun(100, func() {
			_ = h.Handle(ctx, r)
			log.Error("request failed", "method", "createSession")
		}); n != 0 {
			t.Errorf("%s: %v allocations a record", when, n)
		}
	}
	check("nobody subscribed")
	mustSubscribe(t, hub, LevelFatal, newRecorder(t).sink)
	check("a subscriber at fatal")
}

// TestExportJSONShape: the JSON itself is OTLP/JSON as VS Code reads it:
// params {channel, payload}, payload.resourceLogs[].scopeLogs[].logRecords[],
// severityNumber a number, timeUnixNano a decimal string, body.stringValue.
func TestExportJSONShape(t *testing.T) {
	hub := NewHub(Options{Linger: -1})
	when := time.Unix(1736870400, 0)
	rec := &logspb.LogRecord{TimeUnixNano: uint64(when.UnixNano()), SeverityNumber: 9, SeverityText: "info", Body: stringValue("tool call started")}
	params, err := hub.encodeExport(LogsChannel(LevelInfo), []*logspb.LogRecord{rec})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Channel string `json:"channel"`
		Payload struct {
			ResourceLogs []struct {
				ScopeLogs []struct {
					LogRecords []map[string]any `json:"logRecords"`
				} `json:"scopeLogs"`
			} `json:"resourceLogs"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(params, &v); err != nil {
		t.Fatal(err)
	}
	if v.Channel != "ahp-otlp://logs/info" || len(v.Payload.ResourceLogs) != 1 || len(v.Payload.ResourceLogs[0].ScopeLogs) != 1 {
		t.Fatalf("params %s", params)
	}
	r := v.Payload.ResourceLogs[0].ScopeLogs[0].LogRecords[0]
	if r["severityNumber"] != float64(9) || r["severityText"] != "info" || r["timeUnixNano"] != "1736870400000000000" {
		t.Errorf("record %v", r)
	}
	if body, _ := r["body"].(map[string]any); body["stringValue"] != "tool call started" {
		t.Errorf("body %v", r["body"])
	}
	if bytes.Contains(params, []byte("\n")) || bytes.Contains(params, []byte("SEVERITY_NUMBER")) {
		t.Errorf("params are not compact OTLP/JSON: %s", params)
	}
}

// TestSlowSubscriberIsBounded: a subscriber whose sink does not return
// holds at most its buffer; the logger never waits for it; a fast
// subscriber beside it is not held up; once the sink returns, the records
// it held arrive in order, then one record saying how many were lost,
// and nothing is counted twice or lost unsaid.
func TestSlowSubscriberIsBounded(t *testing.T) {
	const buffer, batch, total = 10, 4, 1000
	hub := NewHub(Options{Linger: -1, BufferRecords: buffer, BatchRecords: batch})
	log := slog.New(NewHandler(nil, hub))

	gate := make(chan struct{})
	slow := newRecorder(t)
	slowSub := mustSubscribe(t, hub, LevelInfo, func(ctx context.Context, params json.RawMessage) error {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return slow.sink(ctx, params)
	})
	fastCount := make(chan int, total)
	mustSubscribe(t, hub, LevelError, func(_ context.Context, params json.RawMessage) error {
		e, err := decodeExport(params)
		if err != nil {
			return err
		}
		fastCount <- len(e.records())
		return nil
	})

	logged := make(chan time.Duration)
	go func() {
		start := time.Now()
		for i := range total {
			log.Info(fmt.Sprintf("r%d", i))
		}
		log.Error("the end")
		logged <- time.Since(start)
	}()
	select {
	case d := <-logged:
		t.Logf("%d records logged in %v with a stuck subscriber", total+1, d)
	case <-time.After(20 * time.Second):
		t.Fatal("the logger is blocked by a stuck subscriber")
	}
	// The fast subscriber got its record while the slow one was stuck.
	select {
	case n := <-fastCount:
		if n != 1 {
			t.Fatalf("the fast subscriber got %d records", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fast subscriber is held up by the slow one")
	}
	if d := slowSub.Dropped(); d < total+1-buffer-batch {
		t.Fatalf("the stuck subscriber lost only %d of %d records with a buffer of %d", d, total+1, buffer)
	}
	if got := hub.Stats().Dropped; got != slowSub.Dropped() {
		t.Fatalf("hub counts %d dropped, the subscriber %d", got, slowSub.Dropped())
	}

	close(gate)
	var delivered []string
	var lost int64
	for lost == 0 {
		select {
		case e := <-slow.out:
			recs := e.records()
			if len(recs) > batch+1 {
				t.Fatalf("an export of %d records, batch is %d", len(recs), batch)
			}
			for i, rec := range recs {
				if kv := rec.Attributes; len(kv) == 1 && kv[0].Key == DroppedRecordsKey {
					if i != len(recs)-1 {
						t.Fatalf("the lost-records record is not last in its export")
					}
					lost = kv[0].Value.GetIntValue()
					if rec.SeverityNumber != logspb.SeverityNumber_SEVERITY_NUMBER_WARN ||
						rec.Body.GetStringValue() != fmt.Sprintf("dropped %d log records: this subscriber's buffer (10 records, 1048576 bytes) was full", lost) {
						t.Fatalf("lost-records record %v", rec)
					}
					continue
				}
				delivered = append(delivered, rec.Body.GetStringValue())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no lost-records record; delivered %d", len(delivered))
		}
	}
	if len(delivered) > buffer+batch {
		t.Fatalf("delivered %d records past a buffer of %d", len(delivered), buffer)
	}
	for i, b := range delivered {
		if b != fmt.Sprintf("r%d", i) {
			t.Fatalf("delivered %q: not the first records in order", delivered)
		}
	}
	if int(lost)+len(delivered) != total+1 || uint64(lost) != slowSub.Dropped() {
		t.Fatalf("delivered %d + lost %d != %d logged (subscriber counts %d)", len(delivered), lost, total+1, slowSub.Dropped())
	}

	// After the gap it takes records again.
	log.Info("after")
	if got, _ := slow.bodies(1); got[0] != "after" {
		t.Fatalf("after the gap: %q", got)
	}
}

// TestByteBound: the buffer is bounded in bytes too, and a record larger
// than the whole buffer is lost and said, not held.
func TestByteBound(t *testing.T) {
	hub := NewHub(Options{Linger: -1, BufferBytes: 600, BodyBytes: 4096})
	log := slog.New(NewHandler(nil, hub))
	rec := newRecorder(t)
	sub := mustSubscribe(t, hub, LevelInfo, rec.sink)
	log.Info(strings.Repeat("x", 1000))
	got, _ := rec.bodies(1)
	if !strings.HasPrefix(got[0], "dropped 1 log records") || sub.Dropped() != 1 {
		t.Fatalf("got %q, dropped %d", got, sub.Dropped())
	}
	log.Info("small")
	if got, _ := rec.bodies(1); got[0] != "small" {
		t.Fatalf("got %q", got)
	}
}

// TestUnsubscribeStops: once Close returns, the sink is not called again,
// the hub no longer wants records nobody takes, and Close again is fine.
func TestUnsubscribeStops(t *testing.T) {
	hub := NewHub(Options{Linger: -1})
	log := slog.New(NewHandler(nil, hub))
	var mu sync.Mutex
	calls := 0
	rec := newRecorder(t)
	sub, err := hub.Subscribe(LevelDebug, func(ctx context.Context, params json.RawMessage) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return rec.sink(ctx, params)
	})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("before")
	if got, _ := rec.bodies(1); got[0] != "before" {
		t.Fatalf("got %q", got)
	}
	sub.Close()
	mu.Lock()
	before := calls
	mu.Unlock()
	for range 100 {
		log.Error("after")
	}
	rec.quiet(100 * time.Millisecond)
	mu.Lock()
	after := calls
	mu.Unlock()
	if after != before {
		t.Fatalf("the sink was called %d times after Close", after-before)
	}
	if hub.wants(logspb.SeverityNumber_SEVERITY_NUMBER_FATAL) || hub.Stats().Subscribers != 0 {
		t.Fatalf("the hub still wants records: %+v", hub.Stats())
	}
	sub.Close()
	select {
	case <-sub.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	if sub.Err() != nil {
		t.Fatalf("Err after Close: %v", sub.Err())
	}

	// Subscribing again resumes, from the live edge.
	mustSubscribe(t, hub, LevelDebug, rec.sink)
	log.Debug("again")
	if got, _ := rec.bodies(1); got[0] != "again" {
		t.Fatalf("after resubscribing: %q", got)
	}
}

// TestSinkErrorEndsSubscription: a sink's error (the connection closed)
// ends its subscription, which says why and leaves the hub.
func TestSinkErrorEndsSubscription(t *testing.T) {
	hub := NewHub(Options{Linger: -1})
	gone := errors.New("connection closed")
	sub := mustSubscribe(t, hub, LevelInfo, func(context.Context, json.RawMessage) error { return gone })
	slog.New(NewHandler(nil, hub)).Info("x")
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription goes on after its sink failed")
	}
	if !errors.Is(sub.Err(), gone) || hub.Stats().Subscribers != 0 {
		t.Fatalf("Err %v, stats %+v", sub.Err(), hub.Stats())
	}
}

// TestHubClose ends every subscription and refuses new ones.
func TestHubClose(t *testing.T) {
	hub := NewHub(Options{})
	rec := newRecorder(t)
	a := mustSubscribe(t, hub, LevelInfo, rec.sink)
	b := mustSubscribe(t, hub, LevelError, rec.sink)
	hub.Close()
	for _, s := range []*Subscription{a, b} {
		select {
		case <-s.Done():
		default:
			t.Fatal("a subscription outlived its hub")
		}
	}
	if _, err := hub.Subscribe(LevelInfo, rec.sink); !errors.Is(err, ErrHubClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if _, err := NewHub(Options{}).Subscribe(Level(3), rec.sink); !errors.Is(err, ErrUnknownLevel) {
		t.Fatalf("Subscribe at Level(3): %v", err)
	}
}

// TestLinger: records logged together leave together.
func TestLinger(t *testing.T) {
	hub := NewHub(Options{Linger: 200 * time.Millisecond})
	log := slog.New(NewHandler(nil, hub))
	rec := newRecorder(t)
	mustSubscribe(t, hub, LevelInfo, rec.sink)
	for i := range 5 {
		log.Info(fmt.Sprint(i))
	}
	got, exports := rec.bodies(5)
	if strings.Join(got, "") != "01234" || len(exports) >= 5 {
		t.Fatalf("%d exports of %q", len(exports), got)
	}
}

// TestWithoutExport: a record logged with a context marked WithoutExport
// (a sink's own) goes to the daemon's handler and not to subscribers.
func TestWithoutExport(t *testing.T) {
	hub := NewHub(Options{Linger: -1})
	var out bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&out, nil), hub))
	rec := newRecorder(t)
	mustSubscribe(t, hub, LevelTrace, rec.sink)
	log.InfoContext(WithoutExport(context.Background()), "sent an export")
	log.DebugContext(WithoutExport(context.Background()), "not enabled anywhere")
	log.Info("exported")
	if got, _ := rec.bodies(1); got[0] != "exported" {
		t.Fatalf("got %q", got)
	}
	rec.quiet(50 * time.Millisecond)
	if !strings.Contains(out.String(), "sent an export") || strings.Contains(out.String(), "not enabled anywhere") {
		t.Fatalf("daemon log:\n%s", out.String())
	}
}

// TestNoSecretsExported: what a subscriber gets carries no value of an
// attribute named like a secret, nor a bearer credential in a message.
func TestNoSecretsExported(t *testing.T) {
	hub := NewHub(Options{Linger: -1})
	log := slog.New(NewHandler(nil, hub)).With("connectionToken", "SECRET-1")
	rec := newRecorder(t)
	mustSubscribe(t, hub, LevelInfo, rec.sink)
	log.WithGroup("auth").Info("request refused: Authorization Bearer SECRET-2",
		"token", "SECRET-3",
		slog.Group("headers", "Authorization", "Bearer SECRET-4", "X-Api-Key", "SECRET-5", "Accept", "text/plain"),
		"password", "SECRET-6",
		"client_secret", "SECRET-7",
		slog.Group("credentials", "user", "SECRET-8"),
		"detail", "upstream said: bearer SECRET-9",
	)
	_, exports := rec.bodies(1)
	raw := string(exports[0].raw)
	for i := 1; i <= 9; i++ {
		if s := fmt.Sprintf("SECRET-%d", i); strings.Contains(raw, s) {
			t.Errorf("the export carries %s:\n%s", s, raw)
		}
	}
	for _, want := range []string{`"auth.headers.Accept"`, `"text/plain"`, Redacted} {
		if !strings.Contains(raw, want) {
			t.Errorf("the export lacks %s:\n%s", want, raw)
		}
	}
}

// TestConcurrentChurn: logging from many goroutines while subscribers come
// and go (run under -race).
func TestConcurrentChurn(t *testing.T) {
	hub := NewHub(Options{Linger: time.Millisecond, BufferRecords: 64})
	log := slog.New(NewHandler(slog.DiscardHandler, hub))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			l := log.With("g", g)
			for i := 0; ctx.Err() == nil; i++ {
				l.Info("x", "i", i)
				if i%10 == 0 {
					l.WithGroup("grp").Debug("y", "i", i)
				}
			}
		})
	}
	for i := range 50 {
		s, err := hub.Subscribe(Levels[i%len(Levels)], func(context.Context, json.RawMessage) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		s.Close()
	}
	cancel()
	wg.Wait()
	hub.Close()
	if st := hub.Stats(); st.Subscribers != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestHandlerSlogtest: the tee obeys slog's rules for handlers (groups,
// WithAttrs, LogValuers, a zero time), as the records a subscriber gets
// show them once their dotted keys are nested back into groups.
func TestHandlerSlogtest(t *testing.T) {
	var rec *recorder
	slogtest.Run(t, func(t *testing.T) slog.Handler {
		hub := NewHub(Options{Linger: -1})
		rec = newRecorder(t)
		mustSubscribe(t, hub, LevelTrace, rec.sink)
		return NewHandler(nil, hub)
	}, func(t *testing.T) map[string]any {
		_, exports := rec.bodies(1)
		r := exports[0].records()[0]
		m := map[string]any{slog.LevelKey: r.SeverityText, slog.MessageKey: r.Body.GetStringValue()}
		if r.TimeUnixNano != 0 {
			m[slog.TimeKey] = time.Unix(0, int64(r.TimeUnixNano))
		}
		for _, kv := range r.Attributes {
			parts := strings.Split(kv.Key, ".")
			g := m
			for _, p := range parts[:len(parts)-1] {
				sub, ok := g[p].(map[string]any)
				if !ok {
					sub = map[string]any{}
					g[p] = sub
				}
				g = sub
			}
			var v any = kv.Value.GetStringValue()
			if _, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				v = kv.Value.GetIntValue()
			}
			g[parts[len(parts)-1]] = v
		}
		return m
	})
}
