package agentproc

import (
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/mailbox"
)

// waitDelay bounds exec's stderr copy after the process exits.
const waitDelay = 2 * time.Second

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
