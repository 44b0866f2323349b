// Command ahpd serves the Agent Host Protocol over a JSON-RPC websocket,
// manages the daemon (start, stop, status, doctor), and talks to a running
// one as a client for scripts (sessions, send, watch).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/sandbox"
)

// Exit codes (docs/DAEMON.md "Exit codes").
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitNotRunning = 3
	exitCancelled  = 130
)

// exitErr ends the command with a given exit code; its message (when not
// empty) goes to stderr.
type exitErr struct {
	code int
	msg  string
}

func (e *exitErr) Error() string { return e.msg }

func main() {
	// `ahpd sandbox-exec`, the hidden verb a sandboxed session's process
	// starts as: it confines itself and execs the command, before cobra
	// sees the arguments, which are the command's own (internal/sandbox).
	sandbox.RunIfLauncher()
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and returns the exit code.
func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	var ee *exitErr
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "ahpd:", ee.msg)
		}
		return ee.code
	case errors.Is(err, daemon.ErrUsage), isCobraUsage(err):
		fmt.Fprintln(os.Stderr, "ahpd:", strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	default:
		fmt.Fprintln(os.Stderr, "ahpd:", err)
		return exitError
	}
}

// isCobraUsage recognises cobra's own command-line errors that it raises
// before any flag error func or argument validator of ours runs.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "flag needs an argument") ||
		strings.HasPrefix(msg, "invalid argument")
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", daemon.ErrUsage, fmt.Sprintf(format, args...))
}

// args wraps a cobra argument check so its error exits 2.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageErr("%s %s", cmd.CommandPath(), err)
		}
		return nil
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "ahpd",
		Short: "Serve coding agents over the Agent Host Protocol",
		Long: "ahpd is one process that serves the Agent Host Protocol (AHP) over a JSON-RPC websocket.\n" +
			"VS Code agent-host windows, operators and scripts connect to it and drive the same agent chats at once.\n\n" +
			"Daemon: serve, start, stop, restart, status, doctor, config, version.\n" +
			"Client (for scripts): sessions, send, watch, search, export.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          args(cobra.NoArgs),
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErr("%s: %v", cmd.CommandPath(), err)
	})
	root.AddCommand(
		newServe(), newStart(), newStop(), newRestart(), newStatus(),
		newConfig(), newVersion(), newCompletion(root), newDoctor(),
		newSessions(), newSend(), newWatch(),
		newBot(),        // bot.go
		newAutomation(), // automation.go
		newWorktrees(),  // worktrees.go
		newSearch(),     // search.go
		newExport(),     // export.go
	)
	return root
}
