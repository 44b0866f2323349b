// Package agentproc is the one process kit of the backends that run an
// agent CLI (claude, pi, acp), which keep only their wire protocol: Locate
// finds the CLI, Start runs it in a process group of its own (so a stop or
// a kill reaches the shells and tools it started too) written in the
// Ledger, with a stdin line queue, stdout read in lines of at most MaxLine
// and stderr logged line by line, bounded, its last lines kept for the
// error that reports its end; Close and Kill end it with one Grace and
// return only once it was reaped. HeldTurns is the held-turn queue of the
// conversations that run one turn at a time.
package agentproc

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"
)

const (
	// TailLines is how many stderr lines Tail quotes.
	TailLines = 5
	// LineMax bounds one stderr line: a longer one is cut, and output
	// with no line end is taken as a line once it reaches this, so a
	// process writing without newlines never grows the buffer.
	LineMax = 4 << 10
	// tailLineMax bounds each line Tail quotes.
	tailLineMax = 500
)

// Stderr is an io.Writer for a process's stderr. Each line is logged at
// level under msg and the last TailLines are kept for Tail. It is safe for
// the one goroutine exec.Cmd copies stderr on and Tail's callers at once.
type Stderr struct {
	log   *slog.Logger
	msg   string
	level slog.Level
	// mu guards partial and last.
	mu      sync.Mutex
	partial []byte
	last    []string
}

// NewStderr logs each line at level with msg ("claude stderr").
func NewStderr(log *slog.Logger, msg string, level slog.Level) *Stderr {
	return &Stderr{log: log, msg: msg, level: level}
}

// Write takes output as it comes; it never fails.
func (s *Stderr) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.line(string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
	if len(s.partial) >= LineMax {
		s.line(string(s.partial))
		s.partial = nil
	}
	return len(b), nil
}

// line logs and keeps one line; s.mu is held.
func (s *Stderr) line(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	line = Clip(line, LineMax)
	s.log.Log(context.Background(), s.level, s.msg, "line", line)
	s.last = append(s.last, Clip(line, tailLineMax))
	if len(s.last) > TailLines {
		s.last = s.last[1:]
	}
}

// Tail is the last lines, and any output not yet ended by a newline,
// joined with "; " for an error message; "" when there was none.
func (s *Stderr) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := append([]string(nil), s.last...)
	if p := strings.TrimSpace(string(s.partial)); p != "" {
		lines = append(lines, Clip(p, tailLineMax))
	}
	return strings.Join(lines, "; ")
}

// Clip cuts s to at most n bytes, not inside a UTF-8 sequence, marking the
// cut with "…": for quoting what an agent wrote in a log or an error.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
