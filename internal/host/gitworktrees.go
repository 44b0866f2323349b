package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/gitwork"
	"github.com/ahpd/ahpd/internal/store"
)

// The operator's view of the worktrees the host made for sessions (ahpd
// worktrees): those of live sessions, and those kept after their session
// was disposed because they held changes or commits. Both commands need
// host:worktrees.
const (
	MethodListWorktrees  = "x-ahpd/listWorktrees"
	MethodPruneWorktrees = "x-ahpd/pruneWorktrees"
)

// WorktreeInfo is one worktree a session had.
type WorktreeInfo struct {
	Session    string `json:"session"`
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	Repository string `json:"repository"`
	Base       string `json:"base"`
	CreatedAt  string `json:"createdAt"`
	// Live: its session is not disposed. Kept says why a disposed
	// session's worktree was kept; Exists whether its folder still is.
	Live       bool   `json:"live"`
	DisposedAt string `json:"disposedAt,omitempty"`
	Kept       string `json:"kept,omitempty"`
	Exists     bool   `json:"exists"`
	// Pruned says what prune did with it: "removed", "forgotten" (its
	// folder was gone), or "kept: <why>".
	Pruned string `json:"pruned,omitempty"`
}

func worktreeInfo(r store.SessionGit) WorktreeInfo {
	w := WorktreeInfo{Session: r.Session, Path: r.Worktree, Branch: r.Branch, Repository: r.SourceRepo, Base: r.Base,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339), Live: r.DisposedAt.IsZero(), Kept: r.Kept, Exists: dirExists(r.Worktree)}
	if !w.Live {
		w.DisposedAt = r.DisposedAt.UTC().Format(time.RFC3339)
	}
	return w
}

// request answers the worktree commands; handled is false for any other
// method.
func (g *gitDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (any, bool, error) {
	if method != MethodListWorktrees && method != MethodPruneWorktrees {
		return nil, false, nil
	}
	var p struct {
		Channel string `json:"channel"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, true, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return nil, true, err
	}
	if err := needGrant(cl, method, auth.HostWorktrees); err != nil {
		return nil, true, err
	}
	recs, err := g.env.Store.Git().Worktrees(ctx)
	if err != nil {
		return nil, true, err
	}
	items := []WorktreeInfo{}
	for _, r := range recs {
		w := worktreeInfo(r)
		if method == MethodPruneWorktrees {
			if w.Live {
				continue
			}
			w.Pruned = g.prune(ctx, r)
		}
		items = append(items, w)
	}
	return map[string]any{"items": items}, true, nil
}

// prune tries again to remove a kept worktree: removed when it is now
// clean and merged, forgotten when its folder is gone, kept otherwise.
func (g *gitDesk) prune(ctx context.Context, r store.SessionGit) string {
	ctx, cancel := context.WithTimeout(ctx, gitCallTimeout)
	defer cancel()
	if !dirExists(r.Worktree) {
		if dirExists(r.SourceRepo) {
			if err := gitwork.Prune(ctx, r.SourceRepo); err != nil {
				g.log.Warn("prune worktrees", "repository", r.SourceRepo, "err", err)
			}
		}
		if err := g.env.Store.Git().Delete(ctx, r.Session); err != nil {
			return "kept: " + err.Error()
		}
		return "forgotten"
	}
	removal, err := gitwork.RemoveWorktree(ctx, r.WorktreeRoot, r.Worktree, r.Base)
	if err != nil {
		_ = g.env.Store.Git().Disposed(ctx, r.Session, "error: "+err.Error(), r.DisposedAt)
		return "kept: " + err.Error()
	}
	if !removal.Removed {
		if removal.Kept != r.Kept {
			_ = g.env.Store.Git().Disposed(ctx, r.Session, removal.Kept, r.DisposedAt)
		}
		return "kept: " + removal.Kept
	}
	if err := g.env.Store.Git().Delete(ctx, r.Session); err != nil {
		return fmt.Sprintf("removed (record: %v)", err)
	}
	return "removed"
}
