package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SessionGit is how a session works in git (migration "sessions in git"):
// the work tree it works in, and, for a session in a worktree of its own,
// the repository and branch the worktree was made from.
type SessionGit struct {
	Session string
	// Dir is the top of the work tree the session works in: its worktree,
	// or the repository's own work tree.
	Dir string
	// SourceRepo, Worktree, WorktreeRoot and Branch are set for a session
	// in a worktree of its own: the repository it was made from, the
	// worktree (Dir), the folder worktrees are made under, its branch.
	SourceRepo, Worktree, WorktreeRoot, Branch string
	// Base is the commit the session's branch changes count from; Start
	// the snapshot of the work tree when the session began.
	Base, Start string
	CreatedAt   time.Time
	// DisposedAt is zero while the session lives; Kept says why its
	// worktree outlived it ("dirty", "unmerged commits", or an error).
	DisposedAt time.Time
	Kept       string
}

// GitRecords reads and writes the git side of sessions.
type GitRecords struct{ s *Store }

// Git is the store's git records of sessions.
func (s *Store) Git() GitRecords { return GitRecords{s} }

const sessionGitColumns = `session, dir, source_repo, worktree, worktree_root, branch, base, start, created_at, disposed_at, kept`

// Put stores g, replacing what the session had.
func (g GitRecords) Put(ctx context.Context, r SessionGit) error {
	if r.Session == "" || r.Dir == "" {
		return fmt.Errorf("%w: a session's git record needs its session and directory", ErrInvalid)
	}
	_, err := g.s.db.writeExec(ctx, `INSERT INTO session_git (`+sessionGitColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session) DO UPDATE SET dir = excluded.dir, source_repo = excluded.source_repo,
			worktree = excluded.worktree, worktree_root = excluded.worktree_root, branch = excluded.branch,
			base = excluded.base, start = excluded.start, created_at = excluded.created_at,
			disposed_at = excluded.disposed_at, kept = excluded.kept`,
		r.Session, r.Dir, r.SourceRepo, r.Worktree, r.WorktreeRoot, r.Branch, r.Base, r.Start,
		r.CreatedAt.UnixMilli(), millisOrZero(r.DisposedAt), r.Kept)
	if err != nil {
		return fmt.Errorf("put git record of %s: %w", r.Session, err)
	}
	return nil
}

func millisOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func scanSessionGit(sc scanner) (SessionGit, error) {
	var r SessionGit
	var created, disposed int64
	if err := sc.Scan(&r.Session, &r.Dir, &r.SourceRepo, &r.Worktree, &r.WorktreeRoot, &r.Branch, &r.Base, &r.Start, &created, &disposed, &r.Kept); err != nil {
		return SessionGit{}, err
	}
	r.CreatedAt = time.UnixMilli(created)
	if disposed != 0 {
		r.DisposedAt = time.UnixMilli(disposed)
	}
	return r, nil
}

// Get returns a session's git record; false when it has none.
func (g GitRecords) Get(ctx context.Context, session string) (SessionGit, bool, error) {
	r, err := scanSessionGit(g.s.db.queryRow(ctx, `SELECT `+sessionGitColumns+` FROM session_git WHERE session = ?`, session))
	if errors.Is(err, sql.ErrNoRows) {
		return SessionGit{}, false, nil
	}
	if err != nil {
		return SessionGit{}, false, fmt.Errorf("get git record of %s: %w", session, err)
	}
	return r, true, nil
}

// Sessions lists the sessions that have a git record and are not disposed.
func (g GitRecords) Sessions(ctx context.Context) ([]string, error) {
	rows, err := g.s.db.query(ctx, `SELECT session FROM session_git WHERE disposed_at = 0 ORDER BY session`)
	if err != nil {
		return nil, fmt.Errorf("list git sessions: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var uri string
		if err := rows.Scan(&uri); err != nil {
			return nil, fmt.Errorf("list git sessions: %w", err)
		}
		out = append(out, uri)
	}
	return out, rows.Err()
}

// Worktrees lists the records of sessions in worktrees of their own, live
// and kept, oldest first.
func (g GitRecords) Worktrees(ctx context.Context) ([]SessionGit, error) {
	rows, err := g.s.db.query(ctx, `SELECT `+sessionGitColumns+` FROM session_git WHERE worktree != '' ORDER BY created_at, session`)
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	defer rows.Close()
	var out []SessionGit
	for rows.Next() {
		r, err := scanSessionGit(rows)
		if err != nil {
			return nil, fmt.Errorf("list worktrees: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Delete forgets a session's git record, its turns' snapshots and its
// review marks.
func (g GitRecords) Delete(ctx context.Context, session string) error {
	return g.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM session_git WHERE session = ?`,
			`DELETE FROM turn_snapshots WHERE session = ?`,
			`DELETE FROM changeset_reviews WHERE session = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, session); err != nil {
				return fmt.Errorf("delete git record of %s: %w", session, err)
			}
		}
		return nil
	})
}

// Disposed records that the session ended while its worktree was kept
// (why), and forgets its turns' snapshots and review marks.
func (g GitRecords) Disposed(ctx context.Context, session, kept string, at time.Time) error {
	return g.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE session_git SET disposed_at = ?, kept = ? WHERE session = ?`, at.UnixMilli(), kept, session); err != nil {
			return fmt.Errorf("record kept worktree of %s: %w", session, err)
		}
		for _, q := range []string{`DELETE FROM turn_snapshots WHERE session = ?`, `DELETE FROM changeset_reviews WHERE session = ?`} {
			if _, err := tx.ExecContext(ctx, q, session); err != nil {
				return fmt.Errorf("record kept worktree of %s: %w", session, err)
			}
		}
		return nil
	})
}

// TurnSnapshot is the work tree's snapshot as a turn began (Start) and
// ended (End, "" while it runs).
type TurnSnapshot struct {
	Turn, Chat, Start, End string
}

// PutTurnStart records the snapshot a turn began from (a turn run again
// starts over).
func (g GitRecords) PutTurnStart(ctx context.Context, session, chat, turn, snapshot string) error {
	_, err := g.s.db.writeExec(ctx, `INSERT INTO turn_snapshots (session, turn, chat, start, end_snap) VALUES (?, ?, ?, ?, '')
		ON CONFLICT (session, turn) DO UPDATE SET chat = excluded.chat, start = excluded.start, end_snap = ''`,
		session, turn, chat, snapshot)
	if err != nil {
		return fmt.Errorf("put start snapshot of turn %s: %w", turn, err)
	}
	return nil
}

// PutTurnEnd records the snapshot a turn ended on.
func (g GitRecords) PutTurnEnd(ctx context.Context, session, turn, snapshot string) error {
	_, err := g.s.db.writeExec(ctx, `UPDATE turn_snapshots SET end_snap = ? WHERE session = ? AND turn = ?`, snapshot, session, turn)
	if err != nil {
		return fmt.Errorf("put end snapshot of turn %s: %w", turn, err)
	}
	return nil
}

// Turn returns a turn's snapshots; false when none were taken.
func (g GitRecords) Turn(ctx context.Context, session, turn string) (TurnSnapshot, bool, error) {
	var t TurnSnapshot
	err := g.s.db.queryRow(ctx, `SELECT turn, chat, start, end_snap FROM turn_snapshots WHERE session = ? AND turn = ?`, session, turn).
		Scan(&t.Turn, &t.Chat, &t.Start, &t.End)
	if errors.Is(err, sql.ErrNoRows) {
		return TurnSnapshot{}, false, nil
	}
	if err != nil {
		return TurnSnapshot{}, false, fmt.Errorf("get snapshots of turn %s: %w", turn, err)
	}
	return t, true, nil
}

// HasTurns reports whether a snapshot of any turn of the session was taken.
func (g GitRecords) HasTurns(ctx context.Context, session string) (bool, error) {
	var n int
	err := g.s.db.queryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM turn_snapshots WHERE session = ? LIMIT 1)`, session).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read turns of %s: %w", session, err)
	}
	return n > 0, nil
}

// SetReviewed marks files of a session's changesets reviewed, or clears
// the mark.
func (g GitRecords) SetReviewed(ctx context.Context, session string, files []string, reviewed bool) error {
	return g.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		q := `DELETE FROM changeset_reviews WHERE session = ? AND file = ?`
		if reviewed {
			q = `INSERT INTO changeset_reviews (session, file) VALUES (?, ?) ON CONFLICT DO NOTHING`
		}
		for _, f := range files {
			if _, err := tx.ExecContext(ctx, q, session, f); err != nil {
				return fmt.Errorf("mark %s reviewed: %w", f, err)
			}
		}
		return nil
	})
}

// Reviewed returns the files of a session's changesets marked reviewed.
func (g GitRecords) Reviewed(ctx context.Context, session string) (map[string]bool, error) {
	rows, err := g.s.db.query(ctx, `SELECT file FROM changeset_reviews WHERE session = ?`, session)
	if err != nil {
		return nil, fmt.Errorf("read review marks of %s: %w", session, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, err
		}
		out[f] = true
	}
	return out, rows.Err()
}
