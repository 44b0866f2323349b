package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/host"
)

// newWorktrees is `ahpd worktrees [prune]`: client verbs that list the git
// worktrees a running daemon made for sessions, and prune the ones kept
// after their session was disposed (x-ahpd/listWorktrees,
// x-ahpd/pruneWorktrees; the token needs host:worktrees).
func newWorktrees() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "worktrees",
		Short: "List the git worktrees the daemon made for sessions",
		Long: "A session created with isolation \"worktree\" works in a git worktree of its own, on a branch\n" +
			"ahpd/<session>, under the daemon's worktreesDir (default <data dir>/worktrees). Disposing the session\n" +
			"removes it when it is clean and its commits are held elsewhere, and keeps it otherwise: worktrees\n" +
			"lists both (LIVE yes for a live session, KEPT says why one was kept).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return worktreesCall(cmd, &f, host.MethodListWorktrees)
		},
	}
	f.add(cmd, "print the worktrees as a JSON array")
	var pf clientFlags
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove kept worktrees that are now clean, forget those whose folder is gone",
		Long: "prune tries again, for each worktree kept after its session was disposed: one now clean and\n" +
			"merged is removed with its branch (git worktree remove, never forced), one whose folder is gone\n" +
			"is forgotten (git worktree prune), and one still holding work is kept. Live sessions' are untouched.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return worktreesCall(cmd, &pf, host.MethodPruneWorktrees)
		},
	}
	pf.add(prune, "print what prune did as a JSON array")
	cmd.AddCommand(prune)
	return cmd
}

func worktreesCall(cmd *cobra.Command, f *clientFlags, method string) error {
	var res struct {
		Items []host.WorktreeInfo `json:"items"`
	}
	if err := botCall(cmd.Context(), f, method, map[string]any{}, &res); err != nil {
		return err
	}
	return printWorktrees(cmd.OutOrStdout(), f.asJSON, method == host.MethodPruneWorktrees, res.Items)
}

func printWorktrees(w io.Writer, asJSON, pruned bool, items []host.WorktreeInfo) error {
	if asJSON {
		if items == nil {
			items = []host.WorktreeInfo{}
		}
		return json.NewEncoder(w).Encode(items)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	last := "KEPT"
	if pruned {
		last = "PRUNED"
	}
	fmt.Fprintf(tw, "PATH\tBRANCH\tLIVE\tEXISTS\tSESSION\t%s\n", last)
	for _, it := range items {
		why := it.Kept
		if pruned {
			why = it.Pruned
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.Path, it.Branch, yesNo(it.Live), yesNo(it.Exists), it.Session, why)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
