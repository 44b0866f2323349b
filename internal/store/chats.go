package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// What happened to the backend conversation of a closed chat.
const (
	ClosedHidden = "hidden" // kept by the backend, hidden from the client
	ClosedDelete = "delete" // deleted from the backend
)

// ChatRecord is what the host keeps of a chat across restarts.
type ChatRecord struct {
	URI, Session string
	Position     int // order in the session's chats list
	Title        string
	// TitleProvisional marks a title taken from a ! command, to be replaced
	// by the first message's title.
	TitleProvisional   bool
	Origin             json.RawMessage
	WorkingDirectories []string
	ConversationID     string          // the backend's conversation id
	Draft              json.RawMessage // a protocol Message, or nil
	Interactivity      string
	Flags              int
	Closed             bool
	ClosedMode         string // ClosedHidden or ClosedDelete when Closed
	CreatedAt          time.Time
	ModifiedAt         time.Time
	Meta               json.RawMessage
}

const chatColumns = `uri, session, position, title, title_provisional, origin,
	working_directories, conversation_id, draft, interactivity, flags, closed,
	closed_mode, created_at, modified_at, meta`

// PutChat inserts the chat or replaces every field of the stored one; its
// turns are kept. The session must already be stored.
func (s *Store) PutChat(ctx context.Context, r ChatRecord) error {
	if err := s.putChat(ctx, r); err != nil {
		return fmt.Errorf("put chat %s: %w", r.URI, err)
	}
	return nil
}

func (s *Store) putChat(ctx context.Context, r ChatRecord) error {
	if r.URI == "" || r.Session == "" {
		return fmt.Errorf("%w: uri and session are required", ErrInvalid)
	}
	if r.Closed {
		if err := checkClosedMode(r.ClosedMode); err != nil {
			return err
		}
	}
	origin, err := rawValue("origin", r.Origin)
	if err != nil {
		return err
	}
	draft, err := rawValue("draft", r.Draft)
	if err != nil {
		return err
	}
	meta, err := rawValue("meta", r.Meta)
	if err != nil {
		return err
	}
	_, err = s.db.writeExec(ctx, `INSERT INTO chats (`+chatColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (uri) DO UPDATE SET
				session = excluded.session,
				position = excluded.position,
				title = excluded.title,
				title_provisional = excluded.title_provisional,
				origin = excluded.origin,
				working_directories = excluded.working_directories,
				conversation_id = excluded.conversation_id,
				draft = excluded.draft,
				interactivity = excluded.interactivity,
				flags = excluded.flags,
				closed = excluded.closed,
				closed_mode = excluded.closed_mode,
				created_at = excluded.created_at,
				modified_at = excluded.modified_at,
				meta = excluded.meta`,
		r.URI, r.Session, r.Position, r.Title, boolValue(r.TitleProvisional), origin,
		listValue(r.WorkingDirectories), r.ConversationID, draft, r.Interactivity,
		r.Flags, boolValue(r.Closed), r.ClosedMode, timeValue(r.CreatedAt),
		timeValue(r.ModifiedAt), meta)
	return err
}

// Chat returns the stored chat; ok is false when there is none.
func (s *Store) Chat(ctx context.Context, uri string) (ChatRecord, bool, error) {
	row := s.db.queryRow(ctx, `SELECT `+chatColumns+` FROM chats WHERE uri = ?`, uri)
	r, err := scanChat(row)
	if errors.Is(err, sql.ErrNoRows) {
		return ChatRecord{}, false, nil
	}
	if err != nil {
		return ChatRecord{}, false, fmt.Errorf("get chat %s: %w", uri, err)
	}
	return r, true, nil
}

// Chats returns the session's chats ordered by Position; closed chats only
// when includeClosed.
func (s *Store) Chats(ctx context.Context, session string, includeClosed bool) ([]ChatRecord, error) {
	rows, err := s.db.query(ctx, `SELECT `+chatColumns+` FROM chats
		WHERE session = ? AND (? OR closed = 0)
		ORDER BY position, uri`, session, includeClosed)
	if err != nil {
		return nil, fmt.Errorf("list chats of %s: %w", session, err)
	}
	defer rows.Close()
	var out []ChatRecord
	for rows.Next() {
		r, err := scanChat(rows)
		if err != nil {
			return nil, fmt.Errorf("list chats of %s: %w", session, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list chats of %s: %w", session, err)
	}
	return out, nil
}

// OpenChatsBySession returns every session's open chats, each session's
// ordered by Position, in one query: the catalogue a start lists sessions
// from without opening them.
func (s *Store) OpenChatsBySession(ctx context.Context) (map[string][]ChatRecord, error) {
	rows, err := s.db.query(ctx, `SELECT `+chatColumns+` FROM chats WHERE closed = 0 ORDER BY session, position, uri`)
	if err != nil {
		return nil, fmt.Errorf("list open chats: %w", err)
	}
	defer rows.Close()
	out := map[string][]ChatRecord{}
	for rows.Next() {
		r, err := scanChat(rows)
		if err != nil {
			return nil, fmt.Errorf("list open chats: %w", err)
		}
		out[r.Session] = append(out[r.Session], r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list open chats: %w", err)
	}
	return out, nil
}

// SetDraft stores the chat's draft (a protocol Message); nil clears it. The
// chat must be stored.
func (s *Store) SetDraft(ctx context.Context, chat string, draft json.RawMessage) error {
	v, err := rawValue("draft", draft)
	if err == nil {
		err = s.updateChat(ctx, `UPDATE chats SET draft = ? WHERE uri = ?`, v, chat)
	}
	if err != nil {
		return fmt.Errorf("set draft of %s: %w", chat, err)
	}
	return nil
}

// CloseChat marks the chat closed; mode (ClosedHidden or ClosedDelete) says
// what happened to the backend conversation. The chat and its turns stay
// stored until DeleteChat.
func (s *Store) CloseChat(ctx context.Context, chat, mode string) error {
	err := checkClosedMode(mode)
	if err == nil {
		err = s.updateChat(ctx, `UPDATE chats SET closed = 1, closed_mode = ? WHERE uri = ?`, mode, chat)
	}
	if err != nil {
		return fmt.Errorf("close chat %s: %w", chat, err)
	}
	return nil
}

// DeleteChat removes the chat and its turns. Deleting a chat that is not
// stored is not an error.
func (s *Store) DeleteChat(ctx context.Context, chat string) error {
	if _, err := s.db.writeExec(ctx, `DELETE FROM chats WHERE uri = ?`, chat); err != nil {
		return fmt.Errorf("delete chat %s: %w", chat, err)
	}
	return nil
}

func checkClosedMode(mode string) error {
	if mode != ClosedHidden && mode != ClosedDelete {
		return fmt.Errorf("%w: closed mode %q, want %q or %q", ErrInvalid, mode, ClosedHidden, ClosedDelete)
	}
	return nil
}

// updateChat runs an UPDATE of one chat (the last argument is its URI) and
// reports ErrNotFound when no chat matched.
func (s *Store) updateChat(ctx context.Context, query string, args ...any) error {
	res, err := s.db.writeExec(ctx, query, args...)
	if err != nil {
		return err
	}
	return mustAffect(res, "chat")
}

func mustAffect(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: no such %s", ErrNotFound, what)
	}
	return nil
}

func scanChat(sc scanner) (ChatRecord, error) {
	var (
		r                   ChatRecord
		provisional, closed int
		origin, draft, meta []byte
		dirs                string
		created, modified   sql.NullInt64
	)
	err := sc.Scan(&r.URI, &r.Session, &r.Position, &r.Title, &provisional, &origin,
		&dirs, &r.ConversationID, &draft, &r.Interactivity, &r.Flags, &closed,
		&r.ClosedMode, &created, &modified, &meta)
	if err != nil {
		return ChatRecord{}, err
	}
	r.TitleProvisional, r.Closed = provisional != 0, closed != 0
	r.Origin, r.Draft, r.Meta = rawFrom(origin), rawFrom(draft), rawFrom(meta)
	r.CreatedAt, r.ModifiedAt = timeFrom(created), timeFrom(modified)
	if r.WorkingDirectories, err = listFrom(dirs); err != nil {
		return ChatRecord{}, err
	}
	return r, nil
}
