package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/otlp"
)

// logDesk serves the OTLP log channel (internal/otlp): a connection that
// subscribes to ahp-otlp://logs/{level} gets the daemon's own log records
// at that level and above as otlp/exportLogs notifications. The channel is
// stateless: subscribe answers {} with no snapshot, nothing is replayed,
// and a URI naming no level is acknowledged and installs nothing. A
// connection holds at most one subscription per canonical channel (so six
// at most), kept in its client record; each is a hub subscriber with a
// bounded buffer that never holds up the logger.
type logDesk struct {
	hub *otlp.Hub // nil: the host serves no OTLP channel
	log *slog.Logger
}

// capabilities is initialize's telemetry: the logs channel template, or
// nothing when no hub serves it.
func (d *logDesk) capabilities() *ahp.TelemetryCapabilities {
	if d.hub == nil {
		return nil
	}
	return &ahp.TelemetryCapabilities{Logs: otlp.LogsTemplate}
}

// mayRead reports whether cl may read the host's logs (auth.HostLogs).
func (d *logDesk) mayRead(cl *client) bool { return cl.principal.Can(auth.HostLogs) }

// subscribe installs cl's subscription on uri, an ahp-otlp: URI, unless it
// holds one on the same canonical channel already. A URI that names no
// logs level is acknowledged (nil) and installs nothing, as VS Code's host
// does; a connection without host:logs is refused.
func (d *logDesk) subscribe(cl *client, uri string) error {
	if d.hub == nil {
		return fmt.Errorf("%w: %s (this host serves no OTLP channel)", ahp.ErrResourceNotFound, uri)
	}
	if !d.mayRead(cl) {
		return ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "reading %s needs the grant %s", uri, auth.HostLogs),
			map[string]any{"grant": auth.HostLogs})
	}
	level, err := otlp.ParseLogsChannel(uri)
	if err != nil {
		d.log.Debug("OTLP subscription names no log level: acknowledged, nothing installed",
			"conn", cl.conn.ID(), "channel", uri, "err", err)
		return nil
	}
	if cl.hasLogs(otlp.LogsChannel(level)) {
		return nil
	}
	conn := cl.conn
	// The sink runs on the subscription's goroutine and only queues on the
	// outbox, which never blocks; a closed or overflowing connection ends
	// the subscription (and Disconnected forgets it).
	sub, err := d.hub.Subscribe(level, func(_ context.Context, params json.RawMessage) error {
		return conn.NotifyRaw(otlp.ExportLogsMethod, params)
	})
	if err != nil {
		return ahp.Errorf(ahp.ErrInternal, "subscribe %s: %v", otlp.LogsChannel(level), err)
	}
	if !cl.addLogs(sub) {
		sub.Close() // a duplicate, or the connection left meanwhile
	}
	return nil
}

// restore is reconnect's subscribe: false when the subscription cannot be
// resumed (no level, or subscribe refused it: no hub, no grant, or it
// could not be made), which reconnect answers as missing.
func (d *logDesk) restore(cl *client, uri string) bool {
	if _, err := otlp.ParseLogsChannel(uri); err != nil {
		return false
	}
	return d.subscribe(cl, uri) == nil
}

// unsubscribe closes cl's subscription on uri's canonical channel, if any.
func (d *logDesk) unsubscribe(cl *client, uri string) {
	ch, err := otlp.CanonicalLogsChannel(uri)
	if err != nil {
		return
	}
	if sub := cl.takeLogs(ch); sub != nil {
		sub.Close()
	}
}

// left closes every subscription of a connection that has gone; none is
// taken for it afterwards.
func (d *logDesk) left(cl *client) {
	for _, sub := range cl.logsLeft() {
		sub.Close()
	}
}
