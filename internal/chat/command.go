package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// commandRun is a ! command running as a turn: a local shell command in
// the chat's first directory whose output streams as the turn's parts and
// whose exit status ends it. It never reaches the backend.
type commandRun struct {
	cancel context.CancelFunc
	// once guards kill.
	once sync.Once
}

func (r *commandRun) kill() { r.once.Do(r.cancel) }

// runCommand starts the command of turn t. Its output arrives on
// c.cmdEvents, which the actor's loop reads.
func (c *Chat) runCommand(t *runningTurn, command string) {
	ctx, cancel := context.WithCancel(context.Background())
	run := &commandRun{cancel: cancel}
	t.command = run
	t.sent = true
	shell := c.cfg.CommandShell
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.CommandContext(ctx, shell, "-c", command)
	if len(c.cfg.Directories) > 0 {
		cmd.Dir = c.cfg.Directories[0]
	}
	// A stop interrupts the whole process group, then kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	}
	cmd.WaitDelay = 2 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	events, done := c.cmdEvents, c.inbox.Done()
	id := t.id
	send := func(ev agent.Event) {
		ev.TurnID = id
		// A chat that has stopped reads no more: drop the rest rather than
		// block the command's reader (and so the command) for good.
		select {
		case events <- ev:
		case <-done:
		}
	}
	if err := cmd.Start(); err != nil {
		cancel()
		go send(agent.Event{Kind: agent.EventTurnEnd, End: &agent.End{Outcome: agent.OutcomeError, ErrorType: "commandFailed", Message: fmt.Sprintf("start %q: %v", command, err)}})
		return
	}
	readDone := make(chan struct{})
	go func() {
		// Owned by this goroutine: the command's output reader.
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			if n > 0 {
				send(agent.Event{Kind: agent.EventText, Text: string(buf[:n])})
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		// Owned by this goroutine: waiting for the command.
		err := cmd.Wait()
		pw.Close()
		<-readDone
		cancel()
		code := 0
		var exitErr *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exitErr):
			code = exitErr.ExitCode()
			if code < 0 {
				code = 128 + int(syscall.SIGINT)
				if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
			}
		default:
			code = -1
		}
		end := &agent.End{Outcome: agent.OutcomeComplete, ExitCode: &code}
		if code != 0 {
			end.Outcome = agent.OutcomeError
			end.ErrorType = "commandFailed"
			end.Message = fmt.Sprintf("`%s` exited with status %d", command, code)
			if err != nil && exitErr == nil {
				end.Message = fmt.Sprintf("`%s` failed: %v", command, err)
			}
		}
		send(agent.Event{Kind: agent.EventTurnEnd, End: end})
	}()
}

// onCommandEvent applies a ! command's output and ending to its turn.
func (c *Chat) onCommandEvent(ev agent.Event) {
	t := c.turn
	if t == nil || t.command == nil || t.id != ev.TurnID {
		return
	}
	if ev.Kind == agent.EventTurnEnd {
		// C-TURN-27: when a ! command's turn ends, however it went, the
		// head of the queue starts (endTurn pauses nothing for a command).
		c.endTurn(*ev.End)
		return
	}
	c.applyTurnEvent(t, ev)
}
