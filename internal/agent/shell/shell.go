// Package shell is the backend of a chat's ! commands: a turn's text is a
// shell command run in the chat's first directory, its output streams as
// the turn's answer and its exit status ends it (CHATS.md C-TURN-29..31).
// It reports events like any agent, so the chat's turn engine runs a !
// command as it runs any turn, told only by Caps how this backend differs:
// no steering, no resume, and a failed command pauses nothing (C-TURN-27).
package shell

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

// Caps are what the shell backend can do.
var Caps = agent.Capabilities{OneTurnAtATime: true, FailureGoesOn: true}

const (
	// eventBuffer is how many events wait for the chat before the
	// command's output reader waits too (back-pressure on the command).
	eventBuffer = 64
	// stopGrace is how long a stopped command's group has after SIGINT
	// before it is killed.
	stopGrace = 2 * time.Second
	// chunk is the most output one text event carries.
	chunk = 4096
)

// Conversation runs one chat's ! commands, one at a time.
type Conversation struct {
	shell, dir string
	events     chan agent.Event
	closed     chan struct{}
	closeOnce  sync.Once
	// wg counts the goroutines of the running command; Close waits for them
	// before it closes events.
	wg sync.WaitGroup

	// mu guards cancel.
	mu     sync.Mutex
	cancel context.CancelFunc // of the running command, nil when none
}

// New returns the ! command conversation of a chat working in dir, with
// shell ("/bin/sh" when empty).
func New(shell, dir string) *Conversation {
	if shell == "" {
		shell = "/bin/sh"
	}
	return &Conversation{shell: shell, dir: dir, events: make(chan agent.Event, eventBuffer), closed: make(chan struct{})}
}

// Events carries each command's output and its ending.
func (c *Conversation) Events() <-chan agent.Event { return c.events }

// Send runs t.Text as a shell command.
func (c *Conversation) Send(ctx context.Context, t agent.Turn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return errors.New("run command: the chat's shell is closed")
	default:
	}
	if c.cancel != nil {
		return errors.New("run command: a command is running")
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(runCtx, c.shell, "-c", t.Text)
	cmd.Dir = c.dir
	// A stop interrupts the whole process group; WaitDelay kills it after.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	}
	cmd.WaitDelay = stopGrace
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.send(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{
				Outcome: agent.OutcomeError, ErrorType: "commandFailed", Message: fmt.Sprintf("start %q: %v", t.Text, err)}})
		}()
		return nil
	}
	c.cancel = cancel
	readDone := make(chan struct{})
	c.wg.Add(2)
	go func() {
		// Owned by this goroutine: the command's output reader.
		defer c.wg.Done()
		defer close(readDone)
		buf := make([]byte, chunk)
		for {
			n, err := pr.Read(buf)
			if n > 0 {
				c.send(agent.Event{Kind: agent.EventText, TurnID: t.ID, Text: string(buf[:n])})
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		// Owned by this goroutine: waiting for the command.
		defer c.wg.Done()
		err := cmd.Wait()
		pw.Close()
		<-readDone
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
		c.send(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: ending(t.Text, err)})
	}()
	return nil
}

// ending is how a command that exited with err ends its turn.
func ending(command string, err error) *agent.End {
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
	return end
}

// send hands ev to the chat, waiting while the chat catches up; after
// Close the rest is not wanted.
func (c *Conversation) send(ev agent.Event) {
	select {
	case c.events <- ev:
	case <-c.closed:
	}
}

// Stop interrupts the running command; its turn ends with its status.
func (c *Conversation) Stop(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
	return nil
}

// Steer: a command takes no steering.
func (c *Conversation) Steer(agent.Steering) agent.SteerResult { return agent.SteerUnsupported }

// Withdraw: nothing was ever handed.
func (c *Conversation) Withdraw(string) bool { return false }

// Confirm: a command asks nothing.
func (c *Conversation) Confirm(string, string, bool) error {
	return errors.New("a ! command has no tool calls to confirm")
}

// Close interrupts the running command and closes Events once its
// goroutines are done.
func (c *Conversation) Close() error {
	c.closeOnce.Do(func() {
		// Under mu, so no Send starts a command once closed is closed.
		c.mu.Lock()
		close(c.closed)
		if c.cancel != nil {
			c.cancel()
		}
		c.mu.Unlock()
		c.wg.Wait()
		close(c.events)
	})
	return nil
}

var _ agent.Conversation = (*Conversation)(nil)
