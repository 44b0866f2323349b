package otlp

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
)

// TestIsSecretKey: attribute names that say they carry a secret, however
// they are spelt, and ordinary ones.
func TestIsSecretKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"token", true},
		{"Token", true},
		{"access_token", true},
		{"connectionToken", true},
		{"secret", true},
		{"client-secret", true},
		{"password", true},
		{"db.Password", true},
		{"passwd", true},
		{"Authorization", true},
		{"headers.authorization", true},
		{"apiKey", true},
		{"X-Api-Key", true},
		{"api_key", true},
		{"cookie", true},
		{"Set-Cookie", true},
		{"credentials.user", true},
		{"private_key", true},
		{"inputTokens", true}, // loose on purpose: a count lost, not a token leaked
		{"chat", false},
		{"err", false},
		{"method", false},
		{"uri", false},
		{"authority", false},
		{"author", false},
		{"key", false},
		{"path", false},
		{"", false},
	} {
		if got := IsSecretKey(tc.key); got != tc.want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

// TestText: what a string becomes in an export: valid UTF-8, no bearer
// credential, cut at a rune boundary past the limit.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello", 100, "hello"},
		{"invalid utf-8", "a\xffb", 100, "a\uFFFDb"},
		{"cut", "abcdefgh", 4, "abcd…"},
		{"cut at a rune", "ab€cd", 3, "ab…"},
		{"no limit", strings.Repeat("x", 50), 0, strings.Repeat("x", 50)},
		{"bearer", "auth failed: Bearer abc.def-123 rejected", 100, "auth failed: Bearer [REDACTED] rejected"},
		{"bearer any case", `header "authorization: BEARER xyz"`, 100, `header "authorization: BEARER [REDACTED]"`},
		{"two bearers", "Bearer a, bearer b", 100, "Bearer [REDACTED], bearer [REDACTED]"},
		{"bearer at the end", "the word bearer ", 100, "the word bearer "},
		{"bearer of news", "a bearer\tof news", 100, "a bearer\tof news"},
	} {
		if got := text(tc.in, tc.max); got != tc.want {
			t.Errorf("%s: text(%q, %d) = %q, want %q", tc.name, tc.in, tc.max, got, tc.want)
		}
	}
}

type stringer struct{}

func (stringer) String() string { return "from String" }

type panicky struct{}

func (panicky) String() string { panic("boom") }

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

// TestRecordAttributes: slog attributes, groups (WithGroup, slog.Group,
// nested, empty, inline), WithAttrs, value kinds, limits and redaction, as
// OTLP attributes.
func TestRecordAttributes(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, tc := range []struct {
		name    string
		opts    Options
		with    func(h *Handler) slog.Handler
		attrs   []slog.Attr
		want    string // "key=value ..." in order
		dropped uint32
	}{
		{name: "scalars", attrs: []slog.Attr{
			slog.String("s", "x"), slog.Int("i", -3), slog.Uint64("u", 7), slog.Uint64("big", 1<<63),
			slog.Float64("f", 1.5), slog.Bool("b", true), slog.Duration("d", 1500*time.Millisecond),
			slog.Time("t", when),
		}, want: `s="x" i=-3 u=7 big="9223372036854775808" f=1.5 b=true d="1.5s" t="2026-01-02T03:04:05.000000006Z"`},
		{name: "any", attrs: []slog.Attr{
			slog.Any("err", errors.New("bad thing")), slog.Any("str", stringer{}), slog.Any("nil", nil),
			slog.Any("bytes", []byte("raw")), slog.Any("list", []int{1, 2}), slog.Any("p", panicky{}),
			slog.Any("v", valuer{}),
		}, want: `err="bad thing" str="from String" nil="<nil>" bytes="raw" list="[1 2]" p="!PANIC: boom" v="resolved"`},
		{name: "groups flatten", attrs: []slog.Attr{
			slog.Group("req", slog.String("method", "GET"), slog.Group("peer", slog.Int("port", 1))),
			slog.Group("empty"),
			slog.Group("", slog.String("inlined", "yes")),
			slog.String("", "no key"),
		}, want: `req.method="GET" req.peer.port=1 inlined="yes"`},
		{name: "WithAttrs and WithGroup", with: func(h *Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("conn", "c1")}).WithGroup("chat").WithAttrs([]slog.Attr{slog.String("uri", "ahp-chat:/a")}).WithGroup("turn")
		}, attrs: []slog.Attr{slog.Int("n", 2)}, want: `conn="c1" chat.uri="ahp-chat:/a" chat.turn.n=2`},
		{name: "WithGroup with no attrs", with: func(h *Handler) slog.Handler { return h.WithGroup("g").WithGroup("") },
			attrs: nil, want: ``},
		{name: "redaction", with: func(h *Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("connectionToken", "tok-1")}).WithGroup("credentials")
		}, attrs: []slog.Attr{
			slog.String("user", "u"), slog.Group("http", slog.String("Authorization", "Bearer b"), slog.String("path", "/x")),
		}, want: `connectionToken="[REDACTED]" credentials.user="[REDACTED]" credentials.http.Authorization="[REDACTED]" credentials.http.path="[REDACTED]"`},
		{name: "redaction by name", attrs: []slog.Attr{
			slog.String("password", "hunter2"), slog.Int("apiKey", 12345), slog.String("ok", "fine"), slog.Any("secret", stringer{}),
		}, want: `password="[REDACTED]" apiKey="[REDACTED]" ok="fine" secret="[REDACTED]"`},
		{name: "value limit", opts: Options{ValueBytes: 3}, attrs: []slog.Attr{slog.String("s", "abcdef")}, want: `s="abc…"`},
		{name: "attribute limit", opts: Options{Attrs: 2}, attrs: []slog.Attr{
			slog.Int("a", 1), slog.Int("b", 2), slog.Int("c", 3), slog.Group("g", slog.Int("d", 4), slog.Int("e", 5)),
		}, want: `a=1 b=2`, dropped: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := NewHub(tc.opts)
			h := NewHandler(nil, hub)
			var sh slog.Handler = h
			if tc.with != nil {
				sh = tc.with(h)
			}
			r := slog.NewRecord(when, slog.LevelInfo, "msg", 0)
			r.AddAttrs(tc.attrs...)
			rec := sh.(*Handler).record(r)
			if got := formatAttrs(rec.Attributes); got != tc.want {
				t.Errorf("attributes\n got %s\nwant %s", got, tc.want)
			}
			if rec.DroppedAttributesCount != tc.dropped {
				t.Errorf("dropped %d, want %d", rec.DroppedAttributesCount, tc.dropped)
			}
		})
	}
}

// TestRecordFields: time, observed time, severity and its name, body.
func TestRecordFields(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	observed := when.Add(time.Second)
	hub := NewHub(Options{BodyBytes: 10, Now: func() time.Time { return observed }})
	h := NewHandler(nil, hub)
	for _, tc := range []struct {
		level slog.Level
		msg   string
		sev   logspb.SeverityNumber
		text  string
		body  string
	}{
		{slog.Level(-8), "t", 1, "trace", "t"},
		{slog.LevelDebug, "d", 5, "debug", "d"},
		{slog.LevelInfo + 2, "i", 11, "info", "i"},
		{slog.LevelWarn, "w", 13, "warn", "w"},
		{slog.LevelError, "a long error message", 17, "error", "a long err…"},
		{slog.Level(12), "f\xff", 21, "fatal", "f\uFFFD"},
	} {
		rec := h.record(slog.NewRecord(when, tc.level, tc.msg, 0))
		if rec.SeverityNumber != tc.sev || rec.SeverityText != tc.text || rec.Body.GetStringValue() != tc.body ||
			rec.TimeUnixNano != uint64(when.UnixNano()) || rec.ObservedTimeUnixNano != uint64(observed.UnixNano()) {
			t.Errorf("%v: got %v", tc.level, rec)
		}
	}
	if rec := h.record(slog.NewRecord(time.Time{}, slog.LevelInfo, "no time", 0)); rec.TimeUnixNano != 0 {
		t.Errorf("a record with no time has timeUnixNano %d", rec.TimeUnixNano)
	}
}

func formatAttrs(kvs []*commonpb.KeyValue) string {
	var parts []string
	for _, kv := range kvs {
		var v string
		switch x := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			v = fmt.Sprintf("%q", x.StringValue)
		case *commonpb.AnyValue_IntValue:
			v = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			v = fmt.Sprint(x.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			v = fmt.Sprint(x.BoolValue)
		default:
			v = fmt.Sprintf("%T", x)
		}
		parts = append(parts, kv.Key+"="+v)
	}
	return strings.Join(parts, " ")
}
