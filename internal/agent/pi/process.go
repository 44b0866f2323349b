package pi

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

// Shutdown timing: stdin is closed first (pi exits at EOF), then the
// process group is interrupted, then killed.
const (
	closeGrace     = 3 * time.Second
	interruptGrace = 2 * time.Second
	killWait       = 5 * time.Second
	waitDelay      = 2 * time.Second
)

// maxLine bounds one stdout line. pi's message_update lines carry the whole
// partial message each time, so they grow with the answer; a line past
// this is skipped, not buffered.
const maxLine = 32 << 20

// stdinQueue bounds the stdin lines waiting for pi to read them; a command
// past it is refused (the conversation reports it), never dropped.
const stdinQueue = 1024

// process is one running pi. Its stdin is owned by the writer goroutine and
// its stdout by the reader goroutine.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	// writes queues stdin lines; a nil entry closes stdin.
	writes *mailbox.Box[[]byte]
	stderr *agentproc.Stderr
	log    *slog.Logger
	// endGroup kills what the agent left in its group and crosses the
	// group out of the ledger, once the agent was reaped.
	endGroup func()
	// exited is closed once stdout hit EOF and the process was reaped;
	// waitErr is set before.
	exited       chan struct{}
	waitErr      error
	shutdownOnce sync.Once
}

// startProcess starts bin with args in dir. onLine gets every stdout line
// and onExit is called once the process has been reaped; both run on the
// reader goroutine.
// sandbox, when set, makes pi start through the session's sandbox
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
			return nil, fmt.Errorf("sandbox pi: %w", err)
		}
	}
	p := &process{
		cmd:    cmd,
		writes: mailbox.New[[]byte](stdinQueue),
		stderr: agentproc.NewStderr(log, "pi stderr", slog.LevelInfo),
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
	log.Debug("pi started", "pid", cmd.Process.Pid, "args", strings.Join(args, " "))
	go p.writeLoop()
	go p.readLoop(onLine, onExit)
	return p, nil
}

// write queues one stdin line.
func (p *process) write(line []byte) error {
	if err := p.writes.Push(append(line, '\n')); err != nil {
		return fmt.Errorf("pi stdin: %w", err)
	}
	return nil
}

// dead reports whether the process has exited.
func (p *process) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// writeLoop is the process's stdin writer; only it writes to or closes
// p.stdin. It ends when stdin is closed or the process has exited.
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
				p.log.Warn("pi stdin write failed", "err", err)
				_ = p.stdin.Close()
				return
			}
		}
	}
}

// readLoop is the process's stdout reader; only it reads p.stdout. Records
// are split on LF only (pi's framing: U+2028 is no separator). At EOF it
// reaps the process and reports the exit.
func (p *process) readLoop(onLine func(*process, []byte), onExit func(*process)) {
	r := bufio.NewReaderSize(p.stdout, 64<<10)
	var line []byte
	skipping := false
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case skipping:
		case len(line)+len(chunk) > maxLine:
			p.log.Warn("pi printed a line over the limit; skipped", "limit", maxLine)
			skipping, line = true, nil
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !skipping {
			if l := bytes.TrimRight(line, "\r\n"); len(bytes.TrimSpace(l)) > 0 {
				onLine(p, l)
			}
		}
		line, skipping = line[:0], false
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Warn("pi stdout read failed", "err", err)
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
// group, then a kill; it returns once the process is gone.
func (p *process) shutdown() {
	p.shutdownOnce.Do(func() {
		_ = p.writes.Push(nil)
		if p.waitExit(closeGrace) {
			return
		}
		agentproc.SignalGroup(p.cmd, os.Interrupt)
		if p.waitExit(interruptGrace) {
			return
		}
		p.log.Warn("pi did not exit on interrupt; killing")
		agentproc.SignalGroup(p.cmd, os.Kill)
		if p.waitExit(killWait) {
			return
		}
		_ = p.stdout.Close()
	})
	<-p.exited
}

// kill ends the process group at once and returns once it is gone.
func (p *process) kill() {
	agentproc.SignalGroup(p.cmd, os.Kill)
	if !p.waitExit(killWait) {
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
	msg := "pi exited"
	if p.waitErr != nil {
		msg = fmt.Sprintf("pi exited: %v", p.waitErr)
	}
	if tail := p.stderr.Tail(); tail != "" {
		msg += ": " + tail
	}
	return errors.New(msg)
}
