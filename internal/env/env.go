// Package env is what every actor of one daemon shares, built once by
// internal/daemon and handed down unchanged: the bus, the store, the
// logger, the clock and the limits. The host, each session and each chat
// read it; none of them copies its fields into a config of its own.
package env

import (
	"log/slog"
	"time"

	"github.com/ahpd/ahpd/internal/agentslots"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/sandbox"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/ahpd/ahpd/internal/terminal"
)

// Env is one daemon's shared environment.
type Env struct {
	Bus    *bus.Bus
	Store  *store.Store
	Logger *slog.Logger
	Now    func() time.Time
	Limits Limits
	// Attachments are where and how the bytes messages carry are kept.
	Attachments Attachments
	// Terminals are the host's terminals: those clients open and those
	// ! commands run in (internal/terminal). Nil: New makes one.
	Terminals *terminal.Registry
	// AgentSlots bound how many agent processes run at once
	// (maxAgentProcesses); every chat whose agent runs a process takes a
	// slot from it while its conversation is open. Nil: no bound.
	AgentSlots *agentslots.Pool
	// Sandbox is how the sessions' processes are confined
	// (internal/sandbox); nil confines nothing and refuses every
	// confining mode.
	Sandbox *sandbox.Site
}

// Limits bound what a chat keeps and how long it waits.
type Limits struct {
	// TurnsView is the page size of fetchTurns and of a view without a
	// count.
	TurnsView int
	// TurnsKept is how many ended turns a loaded chat keeps in memory
	// (turnsKept, 0: the chat package's default); the store holds the
	// rest and answers for them (internal/chat/window.go).
	TurnsKept int
	// ChatIdle is how long a chat actor with nothing to do stays loaded
	// (0: the chat package's default; negative: never unloads).
	ChatIdle time.Duration
	// AgentSilence is how long a running turn's agent may say nothing
	// before the turn ends and its process is replaced (0: the chat
	// package's default; negative: never).
	AgentSilence time.Duration
	// AgentIdle is how long a loaded chat's agent conversation may have
	// no work before its process is ended, watched or not; the next turn
	// resumes it (0: the chat package's default; negative: never).
	AgentIdle time.Duration
}

// Attachments are the attachment settings (CHATS.md "Attachments").
type Attachments struct {
	// Dir is <data dir>/attachments: the bytes a message carries are
	// written under its session's folder there (C-ATT-09). Empty: they
	// stay as sent (C-ATT-19).
	Dir string
	// FetchLimit is attachmentFetchLimitBytes: the largest resource only
	// the sending client holds that the host asks it for (0: any size).
	FetchLimit int64
}

// DefaultTurnsView is the page size when the config names none.
const DefaultTurnsView = 50

// New returns an environment with defaults filled in: the system clock, the
// default logger and page size.
func New(e Env) *Env {
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Terminals == nil && e.Bus != nil {
		e.Terminals = terminal.NewRegistry(e.Bus, e.Logger)
	}
	if e.Limits.TurnsView <= 0 {
		e.Limits.TurnsView = DefaultTurnsView
	}
	return &e
}
