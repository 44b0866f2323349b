package otlp

import (
	"errors"
	"testing"
)

// TestParseLogsChannel: the channel URIs a client may subscribe to, the
// canonical URI each is keyed by, and the ones refused.
func TestParseLogsChannel(t *testing.T) {
	for _, tc := range []struct {
		uri       string
		level     Level
		canonical string
		err       error // nil: accepted
	}{
		{"ahp-otlp://logs/trace", LevelTrace, "ahp-otlp://logs/trace", nil},
		{"ahp-otlp://logs/debug", LevelDebug, "ahp-otlp://logs/debug", nil},
		{"ahp-otlp://logs/info", LevelInfo, "ahp-otlp://logs/info", nil},
		{"ahp-otlp://logs/warn", LevelWarn, "ahp-otlp://logs/warn", nil},
		{"ahp-otlp://logs/error", LevelError, "ahp-otlp://logs/error", nil},
		{"ahp-otlp://logs/fatal", LevelFatal, "ahp-otlp://logs/fatal", nil},
		{"ahp-otlp://logs/WARN", LevelWarn, "ahp-otlp://logs/warn", nil},
		{"AHP-OTLP://LOGS/Info", LevelInfo, "ahp-otlp://logs/info", nil},
		{"ahp-otlp://logs/verbose", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs/", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs/info/", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs/info/more", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs/info?x=1", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs/info#top", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs/{level}", 0, "", ErrUnknownLevel},
		{"ahp-otlp://logs", 0, "", ErrNotLogsChannel},
		{"ahp-otlp://logs?level=info", 0, "", ErrNotLogsChannel},
		{"ahp-otlp://traces", 0, "", ErrNotLogsChannel},
		{"ahp-otlp:/logs/info", 0, "", ErrNotLogsChannel},
		{"ahp-otlp://user@logs/info", 0, "", ErrNotLogsChannel},
		{"ahp-otlp://logs:1/info", 0, "", ErrNotLogsChannel},
		{"ahp-state://logs/info", 0, "", ErrNotLogsChannel},
		{"ahp-root://", 0, "", ErrNotLogsChannel},
		{"", 0, "", ErrNotLogsChannel},
	} {
		level, err := ParseLogsChannel(tc.uri)
		canonical, cerr := CanonicalLogsChannel(tc.uri)
		switch {
		case tc.err == nil && (err != nil || cerr != nil):
			t.Errorf("%q refused: %v / %v", tc.uri, err, cerr)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%q: err %v, want %v", tc.uri, err, tc.err)
		case tc.err != nil && !errors.Is(cerr, tc.err):
			t.Errorf("%q: canonical err %v, want %v", tc.uri, cerr, tc.err)
		case level != tc.level || canonical != tc.canonical:
			t.Errorf("%q = %v %q, want %v %q", tc.uri, level, canonical, tc.level, tc.canonical)
		}
	}
}

// TestLogsChannelRoundTrip: each level's URI is "ahp-otlp://logs/<name>"
// and reads back as the level.
func TestLogsChannelRoundTrip(t *testing.T) {
	for _, l := range Levels {
		uri := LogsChannel(l)
		if want := "ahp-otlp://logs/" + l.String(); uri != want {
			t.Errorf("LogsChannel(%v) = %q, want %q", l, uri, want)
		}
		if back, err := ParseLogsChannel(uri); err != nil || back != l {
			t.Errorf("ParseLogsChannel(%q) = %v, %v", uri, back, err)
		}
		if !IsChannel(uri) {
			t.Errorf("IsChannel(%q) = false", uri)
		}
	}
}

// TestIsChannel: which URIs the OTLP side answers for at all (well formed
// or not), so the host does not send them to the state channels.
func TestIsChannel(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"ahp-otlp://logs/info", true},
		{"ahp-otlp://logs/verbose", true},
		{"ahp-otlp://logs", true},
		{"AHP-OTLP://traces", true},
		{"ahp-otlp:", true},
		{"ahp-otlp", false},
		{"ahp-otlpx://logs/info", false},
		{"ahp-root://", false},
		{"ahp-session:/x", false},
		{"file:///ahp-otlp://logs/info", false},
		{"", false},
	} {
		if got := IsChannel(tc.uri); got != tc.want {
			t.Errorf("IsChannel(%q) = %v, want %v", tc.uri, got, tc.want)
		}
	}
}
