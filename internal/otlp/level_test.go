package otlp

import (
	"errors"
	"log/slog"
	"testing"

	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
)

// TestParseLevel: the six names of the template, in any case; anything
// else is refused.
func TestParseLevel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Level
		ok   bool
	}{
		{"trace", LevelTrace, true},
		{"debug", LevelDebug, true},
		{"info", LevelInfo, true},
		{"warn", LevelWarn, true},
		{"error", LevelError, true},
		{"fatal", LevelFatal, true},
		{"TRACE", LevelTrace, true},
		{"Fatal", LevelFatal, true},
		{"wArN", LevelWarn, true},
		{"verbose", 0, false},
		{"warning", 0, false},
		{"", 0, false},
		{" info", 0, false},
		{"info ", 0, false},
		{"9", 0, false},
		{"off", 0, false},
	} {
		got, err := ParseLevel(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUnknownLevel) {
			t.Errorf("ParseLevel(%q): %v is not ErrUnknownLevel", tc.in, err)
		}
	}
}

// TestLevelNames: each level's name, its band's lowest severity number,
// the slog level that starts it, and the name parsed back.
func TestLevelNames(t *testing.T) {
	for _, tc := range []struct {
		level Level
		name  string
		sev   logspb.SeverityNumber
		slog  slog.Level
	}{
		{LevelTrace, "trace", logspb.SeverityNumber_SEVERITY_NUMBER_TRACE, slog.Level(-8)},
		{LevelDebug, "debug", logspb.SeverityNumber_SEVERITY_NUMBER_DEBUG, slog.LevelDebug},
		{LevelInfo, "info", logspb.SeverityNumber_SEVERITY_NUMBER_INFO, slog.LevelInfo},
		{LevelWarn, "warn", logspb.SeverityNumber_SEVERITY_NUMBER_WARN, slog.LevelWarn},
		{LevelError, "error", logspb.SeverityNumber_SEVERITY_NUMBER_ERROR, slog.LevelError},
		{LevelFatal, "fatal", logspb.SeverityNumber_SEVERITY_NUMBER_FATAL, slog.Level(12)},
	} {
		if got := tc.level.String(); got != tc.name {
			t.Errorf("%d.String() = %q, want %q", tc.level, got, tc.name)
		}
		if got := tc.level.Severity(); got != tc.sev {
			t.Errorf("%s.Severity() = %v, want %v", tc.name, got, tc.sev)
		}
		if got := tc.level.Slog(); got != tc.slog {
			t.Errorf("%s.Slog() = %v, want %v", tc.name, got, tc.slog)
		}
		if got := SeverityOf(tc.slog); got != tc.sev {
			t.Errorf("SeverityOf(%v) = %v, want %v", tc.slog, got, tc.sev)
		}
		if back, err := ParseLevel(tc.name); err != nil || back != tc.level || !tc.level.Valid() {
			t.Errorf("ParseLevel(%q) = %v, %v", tc.name, back, err)
		}
	}
	if len(Levels) != 6 {
		t.Fatalf("Levels has %d levels", len(Levels))
	}
	for _, bad := range []Level{0, 2, 12, 22, -1} {
		if bad.Valid() {
			t.Errorf("Level(%d) is valid", bad)
		}
	}
}

// TestSeverityOf: slog's levels map onto OTLP's numbers one step for one
// step, clamped to 1..24.
func TestSeverityOf(t *testing.T) {
	for _, tc := range []struct {
		in   slog.Level
		want int32
	}{
		{slog.Level(-100), 1},
		{slog.Level(-9), 1},
		{slog.Level(-8), 1},
		{slog.Level(-5), 4},
		{slog.LevelDebug, 5},
		{slog.LevelDebug + 2, 7},
		{slog.LevelInfo, 9},
		{slog.LevelInfo + 1, 10},
		{slog.LevelWarn, 13},
		{slog.LevelError, 17},
		{slog.LevelError + 3, 20},
		{slog.Level(12), 21},
		{slog.Level(15), 24},
		{slog.Level(100), 24},
	} {
		if got := int32(SeverityOf(tc.in)); got != tc.want {
			t.Errorf("SeverityOf(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestLevelOfAndAllows: a severity number's band, and which levels take it.
func TestLevelOfAndAllows(t *testing.T) {
	for _, tc := range []struct {
		sev  int32
		band Level
		// the levels that deliver it, lowest first
		allowedBy []Level
	}{
		{0, LevelTrace, nil},
		{1, LevelTrace, []Level{LevelTrace}},
		{4, LevelTrace, []Level{LevelTrace}},
		{5, LevelDebug, []Level{LevelTrace, LevelDebug}},
		{9, LevelInfo, []Level{LevelTrace, LevelDebug, LevelInfo}},
		{12, LevelInfo, []Level{LevelTrace, LevelDebug, LevelInfo}},
		{13, LevelWarn, []Level{LevelTrace, LevelDebug, LevelInfo, LevelWarn}},
		{17, LevelError, []Level{LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError}},
		{21, LevelFatal, Levels},
		{24, LevelFatal, Levels},
		{30, LevelFatal, Levels},
	} {
		sev := logspb.SeverityNumber(tc.sev)
		if got := LevelOf(sev); got != tc.band {
			t.Errorf("LevelOf(%d) = %v, want %v", tc.sev, got, tc.band)
		}
		var allowedBy []Level
		for _, l := range Levels {
			if l.Allows(sev) {
				allowedBy = append(allowedBy, l)
			}
		}
		if !equalLevels(allowedBy, tc.allowedBy) {
			t.Errorf("severity %d is delivered at %v, want %v", tc.sev, allowedBy, tc.allowedBy)
		}
	}
}

func equalLevels(a, b []Level) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
