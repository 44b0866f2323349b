package claude

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/agent/agentproc"
	"github.com/ahpd/ahpd/internal/mailbox"
)

// Shutdown timing: stdin is closed first (the CLI exits at EOF once idle),
// then the process group is interrupted, then killed.
const (
	closeGrace     = 3 * time.Second
	interruptGrace = 2 * time.Second
	killWait       = 5 * time.Second
	// waitDelay bounds exec's stderr copy after the process exits.
	waitDelay = 2 * time.Second
)

// process is one running CLI. Its stdin is owned by the writer goroutine
// and its stdout by the reader goroutine; the conversation hands lines to
// the one and takes them from the other.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	// writes queues stdin lines; a nil entry closes stdin.
	writes *mailbox.Box[[]byte]
	stderr *agentproc.Stderr
	log    *slog.Logger
	// endGroup kills what the CLI left in its group and crosses the
	// group out of the ledger, once the CLI was reaped.
	endGroup func()
	// exited is closed once stdout hit EOF and the process was reaped;
	// waitErr is set before.
	exited  chan struct{}
	waitErr error
	// shutdownOnce runs shutdown once.
	shutdownOnce sync.Once
}

// startProcess starts bin with args in dir. onLine gets every stdout line
// and onExit is called once the process has been reaped; both run on the
// reader goroutine.
// sandbox, when set, makes the CLI start through the session's sandbox
// launcher (agent.OpenParams.Sandbox).
func startProcess(bin string, args []string, dir string, env []string, log *slog.Logger, ledger agentproc.Ledger,
	sandbox func(*exec.Cmd) error, onLine func(*process, []byte), onExit func(*process)) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = waitDelay
	agentproc.SetGroup(cmd)
	if sandbox != nil {
		if err := sandbox(cmd); err != nil {
			return nil, fmt.Errorf("sandbox the claude CLI: %w", err)
		}
	}
	p := &process{
		cmd:    cmd,
		writes: mailbox.New[[]byte](0),
		stderr: agentproc.NewStderr(log, "claude stderr", slog.LevelInfo),
		log:    log,
		exited: make(chan struct{}),
	}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if p.endGroup, err = ledger.Start(cmd); err != nil {
		return nil, err
	}
	log.Debug("claude started", "pid", cmd.Process.Pid, "args", strings.Join(args, " "))
	go p.writeLoop()
	go p.readLoop(onLine, onExit)
	return p, nil
}

// write queues one stdin line.
func (p *process) write(line []byte) {
	if err := p.writes.Push(append(line, '\n')); err != nil {
		p.log.Warn("claude stdin write dropped", "err", err)
	}
}

// closeStdin closes stdin once every queued line is written.
func (p *process) closeStdin() {
	_ = p.writes.Push(nil)
}

// writeLoop is the process's stdin writer, started by startProcess; only
// it writes to or closes p.stdin. It ends when stdin is closed or the
// process has exited.
func (p *process) writeLoop() {
	var batch [][]byte
	for {
		select {
		case <-p.writes.Wake():
		case <-p.exited:
			_ = p.stdin.Close()
			return
		}
		batch = p.writes.Pop(batch)
		for _, line := range batch {
			if line == nil {
				_ = p.stdin.Close()
				return
			}
			if _, err := p.stdin.Write(line); err != nil {
				p.log.Warn("claude stdin write failed", "err", err)
				_ = p.stdin.Close()
				return
			}
		}
	}
}

// readLoop is the process's stdout decoder, started by startProcess; only
// it reads p.stdout. At EOF it reaps the process and reports the exit.
func (p *process) readLoop(onLine func(*process, []byte), onExit func(*process)) {
	r := bufio.NewReaderSize(p.stdout, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			onLine(p, line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Warn("claude stdout read failed", "err", err)
			}
			break
		}
	}
	p.waitErr = p.cmd.Wait()
	p.endGroup()
	close(p.exited)
	onExit(p)
}

// shutdown ends the process: stdin closed, then an interrupt to its process
// group, then a kill; it returns once the process is gone. It must not be
// called with the conversation's lock held (the reader needs it to drain).
func (p *process) shutdown() {
	p.shutdownOnce.Do(func() {
		p.closeStdin()
		if p.waitExit(closeGrace) {
			return
		}
		p.log.Debug("claude did not exit at stdin EOF; interrupting")
		agentproc.SignalGroup(p.cmd, os.Interrupt)
		if p.waitExit(interruptGrace) {
			return
		}
		p.log.Warn("claude did not exit on interrupt; killing")
		agentproc.SignalGroup(p.cmd, os.Kill)
		if p.waitExit(killWait) {
			return
		}
		// Something else holds stdout open; stop reading it.
		_ = p.stdout.Close()
		<-p.exited
	})
	<-p.exited
}

// kill ends the process group at once and returns once the process is
// gone: for a process that stopped answering, which would sit out every
// grace of shutdown (a stopped process takes no SIGINT).
func (p *process) kill() {
	p.log.Warn("killing claude")
	agentproc.SignalGroup(p.cmd, os.Kill)
	if !p.waitExit(killWait) {
		// Something else holds stdout open; stop reading it.
		_ = p.stdout.Close()
	}
	<-p.exited
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitError describes how the process ended, with the end of its stderr.
func (p *process) exitError() error {
	msg := "claude exited"
	if p.waitErr != nil {
		msg = fmt.Sprintf("claude exited: %v", p.waitErr)
	}
	if tail := p.stderr.Tail(); tail != "" {
		msg += ": " + tail
	}
	return errors.New(msg)
}
