package otlp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const (
	// Scheme is every OTLP channel's URI scheme; it tells them from the
	// state channels by the URI alone.
	Scheme = "ahp-otlp"
	// LogsTemplate is the logs channel as initialize advertises it: a
	// template the client expands with a level name before subscribing.
	LogsTemplate = "ahp-otlp://logs/{level}"
	// ExportLogsMethod is the notification the exports travel on.
	ExportLogsMethod = "otlp/exportLogs"

	logsPrefix = "ahp-otlp://logs/"
)

// ExportLogsParams is the params of an otlp/exportLogs notification.
// Payload is an OTLP/JSON ExportLogsServiceRequest.
type ExportLogsParams struct {
	Channel string          `json:"channel"`
	Payload json.RawMessage `json:"payload"`
}

// ErrNotLogsChannel is what ParseLogsChannel refuses a URI that is not
// "ahp-otlp://logs/<level>" with.
var ErrNotLogsChannel = errors.New("not an OTLP logs channel: want ahp-otlp://logs/<level>")

// IsChannel reports whether uri is in the ahp-otlp scheme (any case), that
// is whether the OTLP side of the host answers for it, well formed or not.
func IsChannel(uri string) bool {
	return len(uri) > len(Scheme) && uri[len(Scheme)] == ':' && strings.EqualFold(uri[:len(Scheme)], Scheme)
}

// LogsChannel is the concrete channel URI of a level,
// "ahp-otlp://logs/<level>": the canonical form a subscription is keyed by
// and its exports are sent on.
func LogsChannel(l Level) string { return logsPrefix + l.String() }

// ParseLogsChannel reads the level of a logs channel URI. The scheme, the
// authority and the level are read in any case; anything else after the
// level (a further segment, a query, a fragment) is refused, and so are
// the bare "ahp-otlp://logs" and a level the template does not define.
func ParseLogsChannel(uri string) (Level, error) {
	if len(uri) < len(logsPrefix) || !strings.EqualFold(uri[:len(logsPrefix)], logsPrefix) {
		return 0, fmt.Errorf("%w: %q", ErrNotLogsChannel, uri)
	}
	return ParseLevel(uri[len(logsPrefix):])
}

// CanonicalLogsChannel is the canonical URI of a logs channel URI in any
// case ("AHP-OTLP://logs/WARN" is "ahp-otlp://logs/warn"), so that an
// unsubscribe finds the subscribe it undoes.
func CanonicalLogsChannel(uri string) (string, error) {
	l, err := ParseLogsChannel(uri)
	if err != nil {
		return "", err
	}
	return LogsChannel(l), nil
}
