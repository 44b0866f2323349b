// Package hostcmd is the host's own slash commands: a message such as
// "/rename Fix the tests" is answered by the host, not by the chat's agent,
// as VS Code's host answers its local commands. The chat actor carries out
// what a command does to the chat (a rename); this backend only answers
// the command's turn, so a command turn streams and ends as any other.
package hostcmd

import (
	"context"
	"errors"
	"sync"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/turns"
)

// Names are the host's commands, as a / completes them.
var Names = []agent.Command{{Name: turns.CommandRename, Description: "Rename this chat"}}

// Caps: a command runs at once and takes no steering; one that fails
// pauses nothing (as a ! command).
var Caps = agent.Capabilities{OneTurnAtATime: true, FailureGoesOn: true}

// Answer is what the host says in a command's turn: "" says nothing.
func Answer(c turns.HostCommand) string {
	if c.Name == turns.CommandRename && c.Arg != "" {
		return "Renamed: " + c.Arg
	}
	return ""
}

// Conversation answers command turns: each Send reports the answer and
// the turn's end. One turn runs at a time, so the buffer never fills.
type Conversation struct {
	mu     sync.Mutex
	closed bool
	events chan agent.Event
}

// New returns an open conversation.
func New() *Conversation { return &Conversation{events: make(chan agent.Event, 4)} }

// Events carries each command's answer and its ending.
func (c *Conversation) Events() <-chan agent.Event { return c.events }

// Send answers t.Text, a command turns.ParseHostCommand accepts.
func (c *Conversation) Send(_ context.Context, t agent.Turn) error {
	cmd, ok := turns.ParseHostCommand(t.Text)
	if !ok {
		return errors.New("not a host command: " + t.Text)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("host commands are closed")
	}
	if len(c.events) > cap(c.events)-2 {
		return errors.New("a host command is still answering")
	}
	if text := Answer(cmd); text != "" {
		c.events <- agent.Event{Kind: agent.EventText, TurnID: t.ID, Text: text}
	}
	c.events <- agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeComplete}}
	return nil
}

// Stop: a command has already answered by the time a stop could reach it.
func (c *Conversation) Stop(context.Context) error { return nil }

// Steer: a command takes no steering.
func (c *Conversation) Steer(agent.Steering) agent.SteerResult { return agent.SteerUnsupported }

// Withdraw: nothing was ever handed.
func (c *Conversation) Withdraw(string) bool { return false }

// Confirm: a command asks nothing.
func (c *Conversation) Confirm(string, string, bool) error {
	return errors.New("a host command has no tool calls to confirm")
}

// Close closes Events.
func (c *Conversation) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.events)
	}
	return nil
}

var _ agent.Conversation = (*Conversation)(nil)
