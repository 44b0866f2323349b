package host

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/gitwork"
	"github.com/ahpd/ahpd/internal/store"
)

// Repository-backed sessions (issue 33, AHP 043bc347): a createSession
// that names repositories instead of working directories gets a clone of
// its repository, made under the worktrees folder with the real git, on a
// new branch at the revision asked for, before the session is stored or
// announced. The clone is the session's work tree: a git session like a
// worktree one, with the same changesets, and the same rule at disposal
// (removed only when nothing would be lost: no change, no stash, no commit
// its remote lacks). The accepted list is kept in the session's record and
// published, exactly, in its state and summaries.

// Bounds of cloning.
const (
	// cloneTimeout bounds one clone with its checkout.
	cloneTimeout = 10 * time.Minute
	// maxConcurrentClones bounds the clones running at once; a
	// createSession past it waits for a slot (or for its request to end).
	maxConcurrentClones = 4
)

// repositoryCapabilities is initialize's repositoryPreparation: one
// repository, at any revision, when the host can clone (git is installed
// and it has a worktrees folder); nil otherwise.
func (g *gitDesk) repositoryCapabilities() *ahp.RepositoryPreparationCapabilities {
	if g.root == "" || gitwork.Available() != nil {
		return nil
	}
	return &ahp.RepositoryPreparationCapabilities{Revision: true}
}

// prepareClone clones a new session's repository and returns the folder it
// works in with its git record. A file: source must be a repository inside
// the served paths.
func (g *gitDesk) prepareClone(ctx context.Context, session string, src ahp.RepositorySource, paths servedPaths) (string, *store.SessionGit, error) {
	if u, err := ahp.LocalPath(src.Source); err == nil {
		if !paths.holds(u) {
			return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.repositories[0].source: %s is outside the daemon's served paths", src.Source)
		}
	}
	select {
	case g.clones <- struct{}{}:
		defer func() { <-g.clones }()
	case <-ctx.Done():
		return "", nil, fmt.Errorf("create session %s: waiting to clone: %w", session, ctx.Err())
	}
	ctx, cancel := context.WithTimeout(ctx, cloneTimeout)
	defer cancel()
	name := worktreeName(session)
	wt, err := gitwork.Clone(ctx, g.root, filepath.Join(g.root, name), string(src.Source), src.Revision, "ahpd/"+name)
	if err != nil {
		// git's words name the source as the client gave it, which holds
		// no credential (ahp.CheckRepositories).
		return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.repositories[0]: cloning %s: %v", src.Source, err)
	}
	rec := &store.SessionGit{Session: session, Dir: wt.Path, SourceRepo: string(src.Source), Worktree: wt.Path, WorktreeRoot: g.root,
		Branch: wt.Branch, Base: wt.Head, Start: wt.Head, CreatedAt: g.env.Now()}
	return wt.Path, rec, nil
}
