package agentproc

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/mailbox"
)

// Shutdown timing, one for every CLI backend: Close ends the input (the
// CLIs exit at stdin EOF once idle), waits Grace, interrupts the process
// group, waits Grace again, then kills the group; after a kill it waits
// KillWait for the exit before it stops reading stdout (something outside
// the group holds it open) and waits for the reap.
const (
	Grace    = 3 * time.Second
	KillWait = 5 * time.Second
	// waitDelay bounds exec's stderr copy after the process exits.
	waitDelay = 2 * time.Second
)

// Spec is a CLI to start.
type Spec struct {
	// Name names the CLI in logs and errors ("claude", "pi").
	Name string
	Bin  string
	Args []string
	Dir  string
	// Env is the whole environment; nil is the daemon's.
	Env []string
	// Sandbox, when set, makes the CLI start through the session's sandbox
	// launcher (ToCmd of agent.OpenParams.Sandbox).
	Sandbox func(*exec.Cmd) error
	// Ledger writes the process group down (the zero Ledger does not).
	Ledger Ledger
	Log    *slog.Logger
	// StderrLevel is the level each stderr line is logged at.
	StderrLevel slog.Level
	// StdinQueue, when above 0, makes stdin a queue of that many lines
	// written by a goroutine of the Proc (WriteLine); 0 leaves stdin to
	// the caller (Stdin).
	StdinQueue int
}

// Proc is one running CLI in a process group of its own. Whoever reads its
// stdout calls Reap once stdout is done (exec's rule: Wait after the
// reads); Close and Kill return only once that happened.
type Proc struct {
	name   string
	cmd    *exec.Cmd
	log    *slog.Logger
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *Stderr
	// lines queues stdin lines when Spec.StdinQueue is set; a nil entry
	// closes stdin.
	lines *mailbox.Box[[]byte]
	// endGroup kills what the CLI left in its group and crosses the group
	// out of the ledger, once the CLI was reaped.
	endGroup func()
	// exited is closed once the process was reaped; waitErr is set before.
	exited  chan struct{}
	waitErr error
	// readStopped is closed when Kill gives up on stdout reaching EOF.
	readStopped chan struct{}

	reapOnce, closeOnce, stopReadOnce sync.Once
}

// Start starts the CLI s describes.
func Start(s Spec) (*Proc, error) {
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.WaitDelay = waitDelay
	SetGroup(cmd)
	if s.Sandbox != nil {
		if err := s.Sandbox(cmd); err != nil {
			return nil, fmt.Errorf("start %s: sandbox: %w", s.Name, err)
		}
	}
	p := newProc(s)
	p.cmd = cmd
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	if p.endGroup, err = s.Ledger.Start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p.log.Debug(s.Name+" started", "pid", cmd.Process.Pid, "command", s.Bin, "args", strings.Join(s.Args, " "))
	if p.lines != nil {
		go p.writeLoop()
	}
	return p, nil
}

// Scripted is a Proc with no process behind it, for a backend's tests that
// play the CLI's side: WriteLine queues lines for Written, and Reap marks
// it exited.
func Scripted(s Spec) *Proc {
	if s.StdinQueue <= 0 {
		s.StdinQueue = 1 << 16
	}
	p := newProc(s)
	p.stdout = io.NopCloser(strings.NewReader(""))
	return p
}

func newProc(s Spec) *Proc {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proc{
		name:        s.Name,
		log:         log,
		stderr:      NewStderr(log, s.Name+" stderr", s.StderrLevel),
		endGroup:    func() {},
		exited:      make(chan struct{}),
		readStopped: make(chan struct{}),
	}
	if s.StdinQueue > 0 {
		p.lines = mailbox.New[[]byte](s.StdinQueue)
	}
	return p
}

// Stdin is the CLI's stdin, for a caller that writes it itself (Spec
// StdinQueue 0).
func (p *Proc) Stdin() io.Writer { return p.stdin }

// Stdout is the CLI's stdout, for its one reader.
func (p *Proc) Stdout() io.Reader { return p.stdout }

// Stderr is what the CLI wrote to stderr.
func (p *Proc) Stderr() *Stderr { return p.stderr }

// Exited is closed once the process was reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Dead reports whether the process was reaped.
func (p *Proc) Dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// WaitErr is how the process ended; valid once Exited is closed.
func (p *Proc) WaitErr() error { return p.waitErr }

// ReadStopped is closed when Kill stopped waiting for stdout's EOF: a
// reader blocked elsewhere than on stdout gives up then.
func (p *Proc) ReadStopped() <-chan struct{} { return p.readStopped }

// ExitError says how the process ended, with the end of its stderr.
func (p *Proc) ExitError() error {
	msg := p.name + " exited"
	if p.waitErr != nil {
		msg = fmt.Sprintf("%s exited: %v", p.name, p.waitErr)
	}
	if tail := p.stderr.Tail(); tail != "" {
		msg += ": " + tail
	}
	return fmt.Errorf("%s", msg)
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
