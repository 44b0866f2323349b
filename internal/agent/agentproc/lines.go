package agentproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine bounds one stdout line of a CLI: its records can carry a whole
// partial message (pi's message_update) or a whole file, but a line past
// this is never buffered.
const MaxLine = 32 << 20

// ErrLineTooLong is LineReader.Next's error for a line over its limit; the
// line was skipped to its end and the next call reads the one after it.
var ErrLineTooLong = errors.New("line over the limit")

// LineReader reads LF-ended records (U+2028 is no separator), each
// without its line end, holding at most max bytes of one.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// NewLineReader reads r with the limit max (MaxLine when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = MaxLine
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next is the next line with its "\r\n" or "\n" cut; a last line with no
// end is a line too. At the end it returns io.EOF (or the read's error).
func (l *LineReader) Next() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) > l.max {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, fmt.Errorf("%w of %d bytes", ErrLineTooLong, l.max)
		}
		if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

// ReadLines hands onLine every non-blank stdout line, skipping (with a
// warning) one over max (MaxLine when max <= 0), and reaps the process at
// stdout's end. It is the stdout reader of a line-framed CLI.
func (p *Proc) ReadLines(max int, onLine func([]byte)) {
	defer p.Reap()
	lines := NewLineReader(p.stdout, max)
	for {
		line, err := lines.Next()
		switch {
		case errors.Is(err, ErrLineTooLong):
			p.log.Warn(p.name+" printed a line over the limit; skipped", "err", err)
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Warn(p.name+" stdout read failed", "err", err)
			}
			return
		case len(bytes.TrimSpace(line)) > 0:
			onLine(line)
		}
	}
}
