package agentproc

import "fmt"

// WriteLine queues one stdin line (Spec.StdinQueue); it fails when the
// queue is full or stdin was closed, never blocks.
func (p *Proc) WriteLine(line []byte) error {
	if err := p.lines.Push(append(line, '\n')); err != nil {
		return fmt.Errorf("%s stdin: %w", p.name, err)
	}
	return nil
}

// Written takes the lines queued and not yet written (a Scripted Proc's
// are never written), each with its newline; a nil entry is the close.
func (p *Proc) Written() [][]byte { return p.lines.Pop(nil) }

// writeLoop is the stdin writer; only it writes to or closes p.stdin. It
// ends when stdin is closed or the process has exited.
func (p *Proc) writeLoop() {
	var batch [][]byte
	for {
		select {
		case <-p.lines.Wake():
		case <-p.exited:
			_ = p.stdin.Close()
			return
		}
		batch = p.lines.Pop(batch)
		for _, line := range batch {
			if line == nil {
				_ = p.stdin.Close()
				return
			}
			if _, err := p.stdin.Write(line); err != nil {
				p.log.Warn(p.name+" stdin write failed", "err", err)
				_ = p.stdin.Close()
				return
			}
		}
	}
}
