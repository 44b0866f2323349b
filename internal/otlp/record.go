package otlp

import (
	"encoding"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
)

// Redacted replaces the value of an attribute whose name says it is a
// secret, and a bearer credential found in a string.
const Redacted = "[REDACTED]"

// secretWords are the words that make an attribute's name a secret's, in
// its lower case with '-', '_', '.' and spaces taken out, so "X-Api-Key",
// "access_token", "connectionToken" and "auth.password" all match, and a
// group named like one ("credentials") covers every attribute inside it.
var secretWords = []string{
	"token", "secret", "password", "passwd", "passphrase", "authorization",
	"cookie", "credential", "apikey", "privatekey", "signature",
}

// IsSecretKey reports whether an attribute named key (a dotted path of
// groups and name) carries a secret by its name. Names are matched loosely
// on purpose: a count named "inputTokens" is redacted too, which loses a
// number; the other way round would lose a token.
func IsSecretKey(key string) bool {
	k := keySeparators.Replace(strings.ToLower(key))
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// keySeparators takes out what IsSecretKey ignores between a name's words.
var keySeparators = strings.NewReplacer("-", "", "_", "", ".", "", " ", "")

// scrubBearer replaces what follows "Bearer " (any case) in s, up to the
// next space or quote, with Redacted: an Authorization header's value
// quoted in an error message is still a credential.
func scrubBearer(s string) string {
	const word = "bearer "
	lower := strings.ToLower(s)
	if !strings.Contains(lower, word) {
		return s
	}
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(lower[i:], word)
		if j < 0 {
			break
		}
		start := i + j + len(word)
		end := start
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'`,;", rune(s[end])) {
			end++
		}
		b.WriteString(s[i:start])
		if end > start {
			b.WriteString(Redacted)
		}
		i = end
	}
	b.WriteString(s[i:])
	return b.String()
}

// limits bound what one record may carry, so one record cannot eat a
// subscriber's whole buffer.
type limits struct {
	body   int // bytes of the body
	value  int // bytes of one attribute's string value
	attrs  int // attributes of one record
	groups int // depth of nested groups
}

// text makes s fit an OTLP string: valid UTF-8 (protojson refuses
// anything else), no bearer credential, at most max bytes (cut at a rune
// boundary, with "…" to say so).
func text(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = scrubBearer(s)
	if max > 0 {
		s = agentproc.Clip(s, max)
	}
	return s
}

func stringValue(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

// attrs converts slog attributes to OTLP key-values. Groups are flattened
// into dotted keys ("req.method"), which is how OpenTelemetry names nested
// attributes and what VS Code's reader of these exports understands (it
// reads scalar values only).
type attrs struct {
	lim     limits
	kvs     []*commonpb.KeyValue
	dropped uint32
}

func (c *attrs) add(prefix string, a slog.Attr, depth int) {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() == slog.KindGroup {
		group := a.Value.Group()
		if len(group) == 0 {
			return
		}
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
		}
		if depth >= c.lim.groups {
			c.dropped += uint32(len(group))
			return
		}
		for _, g := range group {
			c.add(p, g, depth+1)
		}
		return
	}
	if a.Key == "" {
		return // slog's handlers drop an attribute with no key
	}
	if len(c.kvs) >= c.lim.attrs {
		c.dropped++
		return
	}
	key := text(prefix+a.Key, c.lim.value)
	var v *commonpb.AnyValue
	if IsSecretKey(key) {
		v = stringValue(Redacted)
	} else {
		v = c.value(a.Value)
	}
	c.kvs = append(c.kvs, &commonpb.KeyValue{Key: key, Value: v})
}

// value converts a scalar slog value to an OTLP AnyValue.
func (c *attrs) value(v slog.Value) (out *commonpb.AnyValue) {
	switch v.Kind() {
	case slog.KindString:
		return stringValue(text(v.String(), c.lim.value))
	case slog.KindInt64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.Int64()}}
	case slog.KindUint64:
		if u := v.Uint64(); u <= math.MaxInt64 {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(u)}}
		}
		return stringValue(fmt.Sprint(v.Uint64()))
	case slog.KindFloat64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.Float64()}}
	case slog.KindBool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.Bool()}}
	case slog.KindDuration:
		return stringValue(v.Duration().String())
	case slog.KindTime:
		return stringValue(v.Time().Format(time.RFC3339Nano))
	}
	// KindAny: an error, a Stringer, bytes, or anything fmt prints. A
	// String method that panics is not the logger's caller's problem.
	defer func() {
		if r := recover(); r != nil {
			out = stringValue(text(fmt.Sprintf("!PANIC: %v", r), c.lim.value))
		}
	}()
	var s string
	switch x := v.Any().(type) {
	case nil:
		s = "<nil>"
	case error:
		s = x.Error()
	case fmt.Stringer:
		s = x.String()
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			s = "!ERROR: " + err.Error()
		} else {
			s = string(b)
		}
	case []byte:
		s = string(x)
	default:
		s = fmt.Sprintf("%+v", x)
	}
	return stringValue(text(s, c.lim.value))
}
