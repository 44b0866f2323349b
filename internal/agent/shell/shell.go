// Package shell is the backend of a chat's ! commands: a turn's text is a
// shell command run in the chat's first directory, in a terminal of the
// host's (internal/terminal) that the session holds. The turn shows what
// VS Code's host shows: one tool call whose result names that terminal and
// carries its output, completed with the command's exit status; a failing
// command fails its tool call, and the turn still completes. It reports
// events like any agent, so the chat's turn engine runs a ! command as it
// runs any turn, told only by Caps how this backend differs: no steering,
// no resume, and a failed command pauses nothing (C-TURN-27).
package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/terminal"
	"github.com/google/uuid"
)

// Caps are what the shell backend can do.
var Caps = agent.Capabilities{OneTurnAtATime: true, FailureGoesOn: true}

const (
	// eventBuffer is how many events wait for the chat.
	eventBuffer = 64
	// stopGrace is how long a stopped command has after SIGINT before it is
	// killed.
	stopGrace = 2 * time.Second
	// maxOutput bounds the output a tool result carries: the rest stays in
	// the terminal (its own scrollback bound).
	maxOutput = 64 << 10
	// ToolName is the tool a ! command's call names.
	ToolName = "run_in_terminal"
)

// Config is where a chat's commands run.
type Config struct {
	// Shell runs each command ("/bin/sh" when empty) with -c.
	Shell string
	// Dir is the chat's first directory.
	Dir string
	// Terminals opens the terminal each command runs in.
	Terminals *terminal.Registry
	// Session and Chat hold the terminals (their claim); Owner opens them.
	Session, Chat, Owner string
	// Wrap, when set, confines each command (the session's sandbox,
	// terminal.Spec.Wrap).
	Wrap func(cmd *exec.Cmd) error
}

// Conversation runs one chat's ! commands, one at a time.
type Conversation struct {
	cfg       Config
	events    chan agent.Event
	closed    chan struct{}
	closeOnce sync.Once
	// wg counts the goroutine of the running command; Close waits for it
	// before it closes events.
	wg sync.WaitGroup

	// mu guards running.
	mu      sync.Mutex
	running *terminal.Terminal // of the running command, nil when none
}

// New returns the ! command conversation of a chat.
func New(cfg Config) *Conversation {
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	return &Conversation{cfg: cfg, events: make(chan agent.Event, eventBuffer), closed: make(chan struct{})}
}

// Events carries each command's tool call and its ending.
func (c *Conversation) Events() <-chan agent.Event { return c.events }

// Send runs t.Text as a shell command in a new terminal.
func (c *Conversation) Send(ctx context.Context, t agent.Turn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return errors.New("run command: the chat's shell is closed")
	default:
	}
	if c.running != nil {
		return errors.New("run command: a command is running")
	}
	if c.cfg.Terminals == nil {
		return errors.New("run command: the host has no terminals")
	}
	call := &agent.ToolCall{ID: t.ID + "-command", Name: ToolName, DisplayName: "Run in Terminal",
		Invocation: "Running `" + t.Text + "`"}
	input, _ := json.Marshal(map[string]string{"command": t.Text})
	call.Input = string(input)
	uri := "ahp-terminal:/" + uuid.NewString()
	term, err := c.cfg.Terminals.Open(terminal.Spec{URI: uri, Title: t.Text, Dir: c.cfg.Dir,
		Claim:   ahp.TerminalClaim{Kind: "session", Session: c.cfg.Session, Chat: c.cfg.Chat, TurnID: t.ID, ToolCallID: call.ID},
		Command: []string{c.cfg.Shell, "-c", t.Text}, Opener: c.cfg.Owner, Wrap: c.cfg.Wrap})
	if err != nil {
		return fmt.Errorf("run %q: %w", t.Text, err)
	}
	c.running = term
	c.wg.Add(1)
	go func() {
		// Owned by this goroutine: the command's tool call, to its end.
		defer c.wg.Done()
		c.send(agent.Event{Kind: agent.EventToolStart, TurnID: t.ID, ToolCall: call})
		c.send(agent.Event{Kind: agent.EventToolReady, TurnID: t.ID, ToolCall: call})
		code, _ := term.Wait(context.Background())
		c.mu.Lock()
		c.running = nil
		c.mu.Unlock()
		done := *call
		done.Success = code == 0
		done.Terminal, done.TerminalTitle = uri, t.Text
		done.Output = output(term.Text())
		done.PastTense = "Ran `" + t.Text + "`"
		if code != 0 {
			done.PastTense = fmt.Sprintf("`%s` exited with status %d", t.Text, code)
		}
		c.send(agent.Event{Kind: agent.EventToolDone, TurnID: t.ID, ToolCall: &done})
		c.send(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeComplete, ExitCode: &code}})
	}()
	return nil
}

// output is a terminal's output as a tool result's text: line ends as
// \n, the newest maxOutput bytes.
func output(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if len(s) > maxOutput {
		cut := len(s) - maxOutput
		for cut < len(s) && s[cut]&0xC0 == 0x80 {
			cut++
		}
		s = s[cut:]
	}
	return s
}

// send hands ev to the chat, waiting while the chat catches up; after
// Close the rest is not wanted.
func (c *Conversation) send(ev agent.Event) {
	select {
	case c.events <- ev:
	case <-c.closed:
	}
}

// Stop interrupts the running command (SIGINT to its group, killed after
// stopGrace); its tool call and turn end with its status.
func (c *Conversation) Stop(context.Context) error {
	c.mu.Lock()
	term := c.running
	c.mu.Unlock()
	if term != nil {
		term.Interrupt()
		go func() {
			select {
			case <-term.Exited():
			case <-time.After(stopGrace):
				term.Kill()
			}
		}()
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
		if c.running != nil {
			c.running.Kill()
		}
		c.mu.Unlock()
		c.wg.Wait()
		close(c.events)
	})
	return nil
}

var _ agent.Conversation = (*Conversation)(nil)
