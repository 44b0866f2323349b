package agentproc

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestStderr: lines are logged and the last TailLines kept; blank lines
// are skipped; output without a newline is quoted by Tail and, past
// LineMax, taken as a line so the buffer stays bounded.
func TestStderr(t *testing.T) {
	long := strings.Repeat("x", LineMax+100)
	tests := []struct {
		name     string
		writes   []string
		tail     string
		logged   int
		partialN int // the most the unfinished buffer may hold
	}{
		{"one line", []string{"boom\n"}, "boom", 1, 0},
		{"split writes", []string{"bo", "om\nsec", "ond\n"}, "boom; second", 2, 0},
		{"blank lines skipped", []string{"\n  \nA\n\n"}, "A", 1, 0},
		{"only the last lines", []string{"1\n2\n3\n4\n5\n6\n7\n"}, "3; 4; 5; 6; 7", 7, 0},
		{"an unfinished line is quoted", []string{"done\nhalf"}, "done; half", 1, 4},
		{"a line with no end is bounded", []string{long}, strings.Repeat("x", tailLineMax) + "…", 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := NewStderr(slog.New(slog.NewTextHandler(&out, nil)), "agent stderr", slog.LevelInfo)
			for _, w := range tc.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := s.Tail(); got != tc.tail {
				t.Errorf("Tail = %q, want %q", got, tc.tail)
			}
			if got := strings.Count(out.String(), `msg="agent stderr"`); got != tc.logged {
				t.Errorf("%d lines logged, want %d:\n%s", got, tc.logged, out.String())
			}
			if len(s.partial) > tc.partialN {
				t.Errorf("%d bytes held unfinished, want at most %d", len(s.partial), tc.partialN)
			}
		})
	}
}

// TestStderrLevel: lines are logged at the level asked for, so a chatty
// agent can log at debug.
func TestStderrLevel(t *testing.T) {
	var out bytes.Buffer
	s := NewStderr(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})), "acp agent stderr", slog.LevelDebug)
	_, _ = s.Write([]byte("quiet\n"))
	if out.Len() != 0 {
		t.Errorf("a debug line was logged at info: %s", out.String())
	}
	if s.Tail() != "quiet" {
		t.Errorf("Tail = %q", s.Tail())
	}
}

// TestClip: a cut never splits a UTF-8 sequence, and is marked.
func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"añb", 2, "a…"}, // ñ is two bytes: not split
		{"ñ", 1, "…"},
	}
	for _, tc := range tests {
		if got := Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
