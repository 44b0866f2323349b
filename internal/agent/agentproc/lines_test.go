package agentproc

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLineReaderSkipsLinesOverTheLimit: each record comes without its line
// end, a line over the limit is reported and skipped to its end, and the
// reader goes on with the next line.
func TestLineReaderSkipsLinesOverTheLimit(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // past the 64 KiB read buffer too
	tests := []struct {
		name  string
		input string
		max   int
		want  []string // "!" marks ErrLineTooLong
	}{
		{"lines end in LF or CRLF", "a\nb\r\nc", 10, []string{"a", "b", "c"}},
		{"U+2028 is no separator", "a\u2028b\n", 10, []string{"a\u2028b"}},
		{"a line at the limit passes", "12345\nx\n", 6, []string{"12345", "x"}},
		{"a line over the limit is skipped", "123456789\nx\n", 6, []string{"!", "x"}},
		{"a long line past the read buffer is skipped", long + "\nafter\n", 100 << 10, []string{"!", "after"}},
		{"an unended long line at EOF is skipped", "ok\n" + long, 1 << 10, []string{"ok", "!"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewLineReader(strings.NewReader(tt.input), tt.max)
			var got []string
			for {
				line, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				switch {
				case errors.Is(err, ErrLineTooLong):
					got = append(got, "!")
				case err != nil:
					t.Fatal(err)
				default:
					got = append(got, string(line))
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLineReaderDefaultsToMaxLine: a limit of 0 is MaxLine.
func TestLineReaderDefaultsToMaxLine(t *testing.T) {
	if r := NewLineReader(strings.NewReader(""), 0); r.max != MaxLine {
		t.Fatalf("max %d, want %d", r.max, MaxLine)
	}
}
