package otlp

import (
	"context"
	"log/slog"

	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
)

// Handler is a slog.Handler that tees: each record goes to the daemon's own
// handler as before, when that one is enabled for it, and to the hub as an
// OTLP LogRecord when some subscriber wants its level. So a subscriber at
// trace sees the debug records a daemon logging at info never writes out,
// and with nobody subscribed the tee costs an atomic load a record.
type Handler struct {
	base  slog.Handler // nil: the hub alone
	hub   *Hub
	pre   []scoped // WithAttrs' attributes, converted when a record is
	group string   // the open groups as a key prefix, "a.b."
	depth int      // how many groups are open
}

// scoped is attributes given to WithAttrs under the groups then open.
type scoped struct {
	prefix string
	depth  int
	attrs  []slog.Attr
}

// NewHandler tees base (which may be nil) to hub.
func NewHandler(base slog.Handler, hub *Hub) *Handler {
	return &Handler{base: base, hub: hub}
}

// Enabled is true when the daemon's handler or a subscriber takes level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	if h.base != nil && h.base.Enabled(ctx, level) {
		return true
	}
	return h.hub.wants(SeverityOf(level)) && !isWithoutExport(ctx)
}

// Handle writes r to the daemon's handler and publishes it to the hub,
// each only if it takes r. The daemon's handler's error is returned; the
// hub never fails.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.base != nil && h.base.Enabled(ctx, r.Level) {
		err = h.base.Handle(ctx, r)
	}
	if sev := SeverityOf(r.Level); h.hub.wants(sev) && !isWithoutExport(ctx) {
		h.hub.publish(h.record(r))
	}
	return err
}

// WithAttrs adds attributes to every record, under the groups open now.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	if h.base != nil {
		c.base = h.base.WithAttrs(as)
	}
	c.pre = append(h.pre[:len(h.pre):len(h.pre)], scoped{prefix: h.group, depth: h.depth, attrs: as})
	return &c
}

// WithGroup opens a group: the attributes that follow are named under it.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	if h.base != nil {
		c.base = h.base.WithGroup(name)
	}
	c.group = h.group + name + "."
	c.depth = h.depth + 1
	return &c
}

// record converts r, with the handler's attributes and groups, to an OTLP
// LogRecord: its time, the time it was observed, its severity number and
// the name of that severity's band, its message as the body, and its
// attributes flattened to dotted keys, secrets redacted.
func (h *Handler) record(r slog.Record) *logspb.LogRecord {
	c := attrs{lim: h.hub.lim}
	for _, p := range h.pre {
		for _, a := range p.attrs {
			c.add(p.prefix, a, p.depth)
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		c.add(h.group, a, h.depth)
		return true
	})
	sev := SeverityOf(r.Level)
	return &logspb.LogRecord{
		TimeUnixNano:           unixNano(r.Time),
		ObservedTimeUnixNano:   unixNano(h.hub.opts.Now()),
		SeverityNumber:         sev,
		SeverityText:           LevelOf(sev).String(),
		Body:                   stringValue(text(r.Message, h.hub.lim.body)),
		Attributes:             c.kvs,
		DroppedAttributesCount: c.dropped,
	}
}

type withoutExportKey struct{}

// WithoutExport marks ctx so that what is logged with it (the
// *Context logging calls) is not exported. A sink's context is marked: a
// sink that logs about each export it sends must log with it, or a
// subscriber at that level would get an export about every export, for
// ever.
func WithoutExport(ctx context.Context) context.Context {
	return context.WithValue(ctx, withoutExportKey{}, true)
}

func isWithoutExport(ctx context.Context) bool {
	return ctx != nil && ctx.Value(withoutExportKey{}) != nil
}
