package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
)

// ChangesetFile is one file a turn of a chat changed on disk: its contents
// before the turn's first change and after its last, by hash (see
// changeset_contents), and the tool call that last changed it.
type ChangesetFile struct {
	Chat, Turn, Path string
	Seq              int64
	ToolCall, Tool   string
	// BeforeExists and AfterExists: the file existed on that side;
	// BeforeHash and AfterHash are empty for a side that did not exist or
	// was not kept (Skipped says why).
	BeforeExists, AfterExists bool
	BeforeHash, AfterHash     string
	Added, Removed            int
	Reviewed                  bool
	Skipped                   string
}

// ContentHash is the name contents are kept under.
func ContentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ChangesetRecords are the files of the changesets stored per turn (Store.Changesets).
type ChangesetRecords struct{ s *Store }

// Changesets are the stored changeset files.
func (s *Store) Changesets() ChangesetRecords { return ChangesetRecords{s} }

// PutFile records that f.Turn changed f.Path: a file the turn
// already changed keeps its first before and takes f's after, call and
// counts (its review is cleared); before and after are the contents to
// keep (nil for a side not kept). It returns the row as stored.
func (c ChangesetRecords) PutFile(ctx context.Context, f ChangesetFile, before, after []byte) (ChangesetFile, error) {
	var out ChangesetFile
	err := c.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		for _, data := range [][]byte{before, after} {
			if data == nil {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO changeset_contents (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`, ContentHash(data), data); err != nil {
				return err
			}
		}
		prev, err := scanChangesetFile(tx.QueryRowContext(ctx, `SELECT `+changesetColumns+` FROM changeset_files WHERE chat = ? AND turn = ? AND path = ?`, f.Chat, f.Turn, f.Path))
		switch {
		case err == nil:
			f.Seq = prev.Seq
			f.BeforeExists, f.BeforeHash = prev.BeforeExists, prev.BeforeHash
			if prev.Skipped != "" && f.Skipped == "" {
				f.Skipped = prev.Skipped
			}
		case errors.Is(err, sql.ErrNoRows):
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM changeset_files WHERE chat = ?`, f.Chat).Scan(&f.Seq); err != nil {
				return err
			}
		default:
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO changeset_files (`+changesetColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (chat, turn, path) DO UPDATE SET tool_call = excluded.tool_call, tool = excluded.tool,
				after_exists = excluded.after_exists, after_hash = excluded.after_hash, added = excluded.added,
				removed = excluded.removed, reviewed = 0, skipped = excluded.skipped`,
			f.Chat, f.Turn, f.Path, f.Seq, f.ToolCall, f.Tool, boolInt(f.BeforeExists), nullString(f.BeforeHash),
			boolInt(f.AfterExists), nullString(f.AfterHash), f.Added, f.Removed, boolInt(f.Reviewed), f.Skipped)
		out = f
		return err
	})
	if err != nil {
		return ChangesetFile{}, fmt.Errorf("store changeset file %s of %s turn %s: %w", f.Path, f.Chat, f.Turn, err)
	}
	return out, nil
}

// Files returns the files chat's turn changed, in the order they
// were first changed; turn "" returns every turn'c.s.
func (c ChangesetRecords) Files(ctx context.Context, chat, turn string) ([]ChangesetFile, error) {
	q, args := `SELECT `+changesetColumns+` FROM changeset_files WHERE chat = ? ORDER BY seq`, []any{chat}
	if turn != "" {
		q, args = `SELECT `+changesetColumns+` FROM changeset_files WHERE chat = ? AND turn = ? ORDER BY seq`, []any{chat, turn}
	}
	rows, err := c.s.db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("changeset files of %s: %w", chat, err)
	}
	defer rows.Close()
	var out []ChangesetFile
	for rows.Next() {
		f, err := scanChangesetFile(rows)
		if err != nil {
			return nil, fmt.Errorf("changeset files of %s: %w", chat, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Content returns the contents of hash when a changeset of chat
// points at them; ok is false otherwise, so one chat's reader never reads
// another's contents by guessing a hash.
func (c ChangesetRecords) Content(ctx context.Context, chat, hash string) (data []byte, ok bool, err error) {
	err = c.s.db.queryRow(ctx, `SELECT c.data FROM changeset_contents c WHERE c.hash = ?
		AND EXISTS (SELECT 1 FROM changeset_files f WHERE f.chat = ? AND (f.before_hash = c.hash OR f.after_hash = c.hash))`, hash, chat).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("changeset content %s of %s: %w", hash, chat, err)
	}
	return data, true, nil
}

// RemoveFiles drops files of chat's turn (undone).
func (c ChangesetRecords) RemoveFiles(ctx context.Context, chat, turn string, paths []string) error {
	return c.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		for _, p := range paths {
			if _, err := tx.ExecContext(ctx, `DELETE FROM changeset_files WHERE chat = ? AND turn = ? AND path = ?`, chat, turn, p); err != nil {
				return fmt.Errorf("remove changeset file %s of %s turn %s: %w", p, chat, turn, err)
			}
		}
		return nil
	})
}

// SetReviewed sets reviewed on files of chat's turn.
func (c ChangesetRecords) SetReviewed(ctx context.Context, chat, turn string, paths []string, reviewed bool) error {
	return c.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		for _, p := range paths {
			if _, err := tx.ExecContext(ctx, `UPDATE changeset_files SET reviewed = ? WHERE chat = ? AND turn = ? AND path = ?`, boolInt(reviewed), chat, turn, p); err != nil {
				return fmt.Errorf("review changeset file %s of %s turn %s: %w", p, chat, turn, err)
			}
		}
		return nil
	})
}

const changesetColumns = `chat, turn, path, seq, tool_call, tool, before_exists, before_hash, after_exists, after_hash, added, removed, reviewed, skipped`

func scanChangesetFile(sc scanner) (ChangesetFile, error) {
	var f ChangesetFile
	var be, ae, rev int
	var bh, ah sql.NullString
	if err := sc.Scan(&f.Chat, &f.Turn, &f.Path, &f.Seq, &f.ToolCall, &f.Tool, &be, &bh, &ae, &ah, &f.Added, &f.Removed, &rev, &f.Skipped); err != nil {
		return ChangesetFile{}, err
	}
	f.BeforeExists, f.AfterExists, f.Reviewed = be != 0, ae != 0, rev != 0
	f.BeforeHash, f.AfterHash = bh.String, ah.String
	return f, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// HasFiles reports whether chat has changed a file (any turn).
func (c ChangesetRecords) HasFiles(ctx context.Context, chat string) (bool, error) {
	var n int
	if err := c.s.db.queryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM changeset_files WHERE chat = ? LIMIT 1)`, chat).Scan(&n); err != nil {
		return false, fmt.Errorf("changeset files of %s: %w", chat, err)
	}
	return n > 0, nil
}
