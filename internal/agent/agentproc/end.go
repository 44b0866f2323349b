package agentproc

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Shutdown timing, one for every CLI backend: Close ends the input (the
// CLIs exit at stdin EOF once idle), waits Grace, interrupts the process
// group, waits Grace again, then kills the group; after a kill it waits
// KillWait for the exit before it stops reading stdout (something outside
// the group holds it open) and waits for the reap.
const (
	Grace    = 3 * time.Second
	KillWait = 5 * time.Second
)

// ExitError says how the process ended, with the end of its stderr.
func (p *Proc) ExitError() error {
	msg := p.name + " exited"
	if p.waitErr != nil {
		msg = fmt.Sprintf("%s exited: %v", p.name, p.waitErr)
	}
	if tail := p.stderr.Tail(); tail != "" {
		msg += ": " + tail
	}
	return errors.New(msg)
}

// Reap waits for the process, ends what it left in its group and marks it
// exited; the stdout reader calls it once stdout is done. Only the first
// call counts.
func (p *Proc) Reap() {
	p.reapOnce.Do(func() {
		if p.cmd != nil {
			p.waitErr = p.cmd.Wait()
		}
		p.endGroup()
		close(p.exited)
	})
}

// Close ends the CLI: its input ended (the queued lines written first),
// then after Grace an interrupt to its group, then after Grace a kill. It
// returns once the process was reaped. It must not be called with a lock
// the stdout reader needs to drain.
func (p *Proc) Close() {
	p.closeOnce.Do(func() {
		p.closeInput()
		if p.waitExit(Grace) {
			return
		}
		p.log.Debug(p.name + " did not exit at stdin EOF; interrupting")
		p.Signal(os.Interrupt)
		if p.waitExit(Grace) {
			return
		}
		p.log.Warn(p.name + " did not exit on interrupt; killing")
		p.Kill()
	})
	<-p.exited
}

// Kill kills the process group at once and returns once the process was
// reaped: for a CLI that stopped answering, which would sit out every
// grace of Close (a stopped process takes no interrupt).
func (p *Proc) Kill() {
	p.Signal(os.Kill)
	if !p.waitExit(KillWait) {
		p.stopReading()
	}
	<-p.exited
}

// Signal signals the process group without waiting: for the stdout
// reader itself, which Kill would wait on.
func (p *Proc) Signal(sig os.Signal) {
	if p.cmd != nil {
		SignalGroup(p.cmd, sig)
	}
}

// closeInput ends stdin: after the queued lines when there is a queue.
func (p *Proc) closeInput() {
	if p.lines != nil {
		_ = p.lines.Push(nil)
		return
	}
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
}

// stopReading closes stdout, which something outside the group holds
// open, so its reader ends and reaps.
func (p *Proc) stopReading() {
	p.stopReadOnce.Do(func() {
		close(p.readStopped)
		_ = p.stdout.Close()
	})
}

func (p *Proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
