package otlp

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
)

// Level is a minimum severity as the channel template's {level} names it:
// one of the six bands of OTLP's SeverityNumber. Its value is the lowest
// SeverityNumber of its band, so a record is delivered at a level when its
// severity number is at least the level.
type Level int32

// The six levels, lowest first.
const (
	LevelTrace Level = 1
	LevelDebug Level = 5
	LevelInfo  Level = 9
	LevelWarn  Level = 13
	LevelError Level = 17
	LevelFatal Level = 21
)

// Levels is every level, lowest first.
var Levels = []Level{LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError, LevelFatal}

// String is the level's name in the channel template: "trace", "debug",
// "info", "warn", "error" or "fatal".
func (l Level) String() string {
	switch l {
	case LevelTrace:
		return "trace"
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	case LevelFatal:
		return "fatal"
	}
	return fmt.Sprintf("Level(%d)", int32(l))
}

// Valid reports whether l is one of the six levels.
func (l Level) Valid() bool { return slices.Contains(Levels, l) }

// Severity is the lowest OTLP SeverityNumber of the level's band.
func (l Level) Severity() logspb.SeverityNumber { return logspb.SeverityNumber(l) }

// Allows reports whether a record of severity sev is delivered at l.
func (l Level) Allows(sev logspb.SeverityNumber) bool { return int32(sev) >= int32(l) }

// Slog is the slog level whose records start the level's band (Trace is
// slog.Level(-8), Fatal slog.Level(12), the others slog's own).
func (l Level) Slog() slog.Level { return slog.Level(int32(l) - severityOffset) }

// ErrUnknownLevel is what ParseLevel and ParseLogsChannel refuse a name
// the template does not define with.
var ErrUnknownLevel = fmt.Errorf("unknown OTLP log level: want one of trace, debug, info, warn, error, fatal")

// ParseLevel reads a level's name, in any case.
func ParseLevel(name string) (Level, error) {
	for _, l := range Levels {
		if strings.EqualFold(name, l.String()) {
			return l, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownLevel, name)
}

// LevelOf is the band a severity number falls in; a number outside 1..24
// is clamped into it.
func LevelOf(sev logspb.SeverityNumber) Level {
	switch s := int32(sev); {
	case s >= int32(LevelFatal):
		return LevelFatal
	case s >= int32(LevelError):
		return LevelError
	case s >= int32(LevelWarn):
		return LevelWarn
	case s >= int32(LevelInfo):
		return LevelInfo
	case s >= int32(LevelDebug):
		return LevelDebug
	}
	return LevelTrace
}

// severityOffset maps slog's levels onto OTLP's numbers as OpenTelemetry's
// slog bridge does: Debug (-4) is 5, Info (0) is 9, Warn (4) is 13, Error
// (8) is 17, and each step of slog's is a step of OTLP's.
const severityOffset = 9

// SeverityOf is the OTLP SeverityNumber of a slog level, clamped to 1..24:
// below Trace is Trace, above Fatal4 is Fatal4.
func SeverityOf(l slog.Level) logspb.SeverityNumber {
	s := int64(l) + severityOffset
	switch {
	case s < 1:
		s = 1
	case s > 24:
		s = 24
	}
	return logspb.SeverityNumber(s)
}
