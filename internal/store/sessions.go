package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session status bits kept in SessionRecord.Flags (and ChatRecord.Flags).
const (
	FlagIsRead     = 32
	FlagIsArchived = 64
)

// SessionRecord is what the host keeps of a session across restarts.
type SessionRecord struct {
	URI, Provider, Title  string
	CreatedAt, ModifiedAt time.Time
	WorkingDirectories    []string
	DefaultChat           string
	Flags                 int    // FlagIsRead | FlagIsArchived
	Owner                 string // "user:<id>", "root:<host>" or ""
	Config                json.RawMessage
	Meta                  json.RawMessage // anything else the host keeps (opaque)
}

const sessionColumns = `uri, provider, title, created_at, modified_at, working_directories,
	default_chat, flags, owner, config, meta`

// PutSession inserts the session or replaces every field of the stored one.
// Its chats are kept: an update is never a delete and re-insert.
func (s *Store) PutSession(ctx context.Context, r SessionRecord) error {
	if err := s.putSession(ctx, r); err != nil {
		return fmt.Errorf("put session %s: %w", r.URI, err)
	}
	return nil
}

func (s *Store) putSession(ctx context.Context, r SessionRecord) error {
	if r.URI == "" {
		return fmt.Errorf("%w: empty uri", ErrInvalid)
	}
	config, err := rawValue("config", r.Config)
	if err != nil {
		return err
	}
	meta, err := rawValue("meta", r.Meta)
	if err != nil {
		return err
	}
	_, err = s.db.writeExec(ctx, `INSERT INTO sessions (`+sessionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (uri) DO UPDATE SET
				provider = excluded.provider,
				title = excluded.title,
				created_at = excluded.created_at,
				modified_at = excluded.modified_at,
				working_directories = excluded.working_directories,
				default_chat = excluded.default_chat,
				flags = excluded.flags,
				owner = excluded.owner,
				config = excluded.config,
				meta = excluded.meta`,
		r.URI, r.Provider, r.Title, timeValue(r.CreatedAt), timeValue(r.ModifiedAt),
		listValue(r.WorkingDirectories), r.DefaultChat, r.Flags, r.Owner, config, meta)
	return err
}

// Session returns the stored session; ok is false when there is none.
func (s *Store) Session(ctx context.Context, uri string) (SessionRecord, bool, error) {
	row := s.db.queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE uri = ?`, uri)
	r, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return SessionRecord{}, false, nil
	}
	if err != nil {
		return SessionRecord{}, false, fmt.Errorf("get session %s: %w", uri, err)
	}
	return r, true, nil
}

// Sessions returns every stored session, most recently modified first.
func (s *Store) Sessions(ctx context.Context) ([]SessionRecord, error) {
	rows, err := s.db.query(ctx, `SELECT `+sessionColumns+` FROM sessions
		ORDER BY modified_at DESC, uri`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionRecord
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession removes the session with its chats and their turns. Deleting
// a session that is not stored is not an error.
func (s *Store) DeleteSession(ctx context.Context, uri string) error {
	if _, err := s.db.writeExec(ctx, `DELETE FROM sessions WHERE uri = ?`, uri); err != nil {
		return fmt.Errorf("delete session %s: %w", uri, err)
	}
	return nil
}

func scanSession(sc scanner) (SessionRecord, error) {
	var (
		r                 SessionRecord
		created, modified sql.NullInt64
		dirs              string
		config, meta      []byte
	)
	err := sc.Scan(&r.URI, &r.Provider, &r.Title, &created, &modified, &dirs,
		&r.DefaultChat, &r.Flags, &r.Owner, &config, &meta)
	if err != nil {
		return SessionRecord{}, err
	}
	r.CreatedAt, r.ModifiedAt = timeFrom(created), timeFrom(modified)
	r.Config, r.Meta = rawFrom(config), rawFrom(meta)
	if r.WorkingDirectories, err = listFrom(dirs); err != nil {
		return SessionRecord{}, err
	}
	return r, nil
}
