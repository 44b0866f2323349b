package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Turn states as stored. A turn is written as TurnRunning when it starts and
// rewritten with its final state when it ends; a TurnRunning row found at
// startup is a turn a crash interrupted.
const (
	TurnRunning   = "running"
	TurnComplete  = "complete"
	TurnCancelled = "cancelled"
	TurnError     = "error"
)

// TurnRecord is one turn of a chat's transcript.
type TurnRecord struct {
	Chat, ID  string
	Seq       int    // 0-based position in the chat's transcript; unique per chat
	State     string // TurnRunning, TurnComplete, TurnCancelled or TurnError
	Sender    string // "" when unknown
	Point     string // the backend's fork/rewind point for this turn ("" = none)
	Command   bool   // a local ! command turn
	StartedAt time.Time
	Body      json.RawMessage // the protocol Turn (ActiveTurn while running)
	// BodyMarshalled says Body is json.Marshal's output in this process,
	// so the store does not parse it again to check it (for a 200-part
	// turn the check was a sixth of its write); any other Body is checked.
	// It is not stored: a record read back has it false.
	BodyMarshalled bool
	// SearchText, when set, is the text of the Turn in Body that search
	// finds it by (chat.SearchText: its message and its markdown parts,
	// one per line, as turnTextSQL takes them from the JSON), given by a
	// writer that holds the Turn so the store does not take it out of Body
	// in SQL (for a 200-part turn that was more than the rest of its
	// write). It is not stored apart from the index: the store keeps it
	// in memory until the turn is indexed (searchindex.go), and a record
	// read back has it nil.
	SearchText *string
}

const turnColumns = `chat, id, seq, state, sender, point, command, started_at, body`

func validState(state string) bool {
	switch state {
	case TurnRunning, TurnComplete, TurnCancelled, TurnError:
		return true
	}
	return false
}

// PutTurn inserts the turn or replaces the stored one with the same (Chat,
// ID). The chat must be stored, and no other turn of the chat may hold Seq
// (TruncateTurns first when a transcript is cut back).
func (s *Store) PutTurn(ctx context.Context, r TurnRecord) error {
	if err := s.putTurn(ctx, r); err != nil {
		return fmt.Errorf("put turn %s/%s: %w", r.Chat, r.ID, err)
	}
	return nil
}

func (s *Store) putTurn(ctx context.Context, r TurnRecord) error {
	switch {
	case r.Chat == "" || r.ID == "":
		return fmt.Errorf("%w: chat and id are required", ErrInvalid)
	case r.Seq < 0:
		return fmt.Errorf("%w: seq %d is negative", ErrInvalid, r.Seq)
	case !validState(r.State):
		return fmt.Errorf("%w: state %q", ErrInvalid, r.State)
	}
	var body any = string(r.Body)
	if !r.BodyMarshalled || r.Body == nil {
		var err error
		if body, err = rawValue("body", r.Body); err != nil {
			return err
		}
	}
	args := []any{r.Chat, r.ID, r.Seq, r.State, r.Sender, r.Point, boolValue(r.Command), timeValue(r.StartedAt), body}
	if r.State == TurnRunning {
		// Not indexed (search.go).
		_, err := s.db.writeExec(ctx, upsertTurn, args...)
		return err
	}
	// The search index takes a finished turn later, in a batch, with the
	// text kept once the turn committed; the statement itself writes at
	// most a marker, by trigger (searchindex.go).
	_, err := s.db.writeExecThen(ctx, func() { s.search.wrote(ctx, turnKey{r.Chat, r.ID}, r.SearchText) }, upsertTurn, args...)
	return err
}

const upsertTurn = `INSERT INTO turns (` + turnColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (chat, id) DO UPDATE SET
		seq = excluded.seq,
		state = excluded.state,
		sender = excluded.sender,
		point = excluded.point,
		command = excluded.command,
		started_at = excluded.started_at,
		body = excluded.body`

// Turn returns one turn; ok is false when there is none.
func (s *Store) Turn(ctx context.Context, chat, id string) (TurnRecord, bool, error) {
	row := s.db.queryRow(ctx, `SELECT `+turnColumns+` FROM turns WHERE chat = ? AND id = ?`, chat, id)
	r, err := scanTurn(row)
	if errors.Is(err, sql.ErrNoRows) {
		return TurnRecord{}, false, nil
	}
	if err != nil {
		return TurnRecord{}, false, fmt.Errorf("get turn %s/%s: %w", chat, id, err)
	}
	return r, true, nil
}

// Turns returns the chat's whole transcript in Seq order.
func (s *Store) Turns(ctx context.Context, chat string) ([]TurnRecord, error) {
	out, err := s.queryTurns(ctx, `SELECT `+turnColumns+` FROM turns WHERE chat = ? ORDER BY seq`, chat)
	if err != nil {
		return nil, fmt.Errorf("list turns of %s: %w", chat, err)
	}
	return out, nil
}

// TurnsBefore returns up to limit turns immediately before beforeSeq (those
// with the greatest Seq < beforeSeq), oldest first. It returns none when
// limit <= 0 or beforeSeq <= 0.
func (s *Store) TurnsBefore(ctx context.Context, chat string, beforeSeq, limit int) ([]TurnRecord, error) {
	if limit <= 0 || beforeSeq <= 0 {
		return nil, nil
	}
	out, err := s.queryTurns(ctx, `SELECT `+turnColumns+` FROM turns
		WHERE chat = ? AND seq < ? ORDER BY seq DESC LIMIT ?`, chat, beforeSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("list %d turns of %s before %d: %w", limit, chat, beforeSeq, err)
	}
	slices.Reverse(out)
	return out, nil
}

// TurnsBetween returns the chat's turns with fromSeq <= Seq < toSeq, oldest
// first: the part of a transcript a loaded chat no longer keeps in memory.
// It returns none when the range is empty.
func (s *Store) TurnsBetween(ctx context.Context, chat string, fromSeq, toSeq int) ([]TurnRecord, error) {
	if toSeq <= fromSeq {
		return nil, nil
	}
	out, err := s.queryTurns(ctx, `SELECT `+turnColumns+` FROM turns
		WHERE chat = ? AND seq >= ? AND seq < ? ORDER BY seq`, chat, fromSeq, toSeq)
	if err != nil {
		return nil, fmt.Errorf("list turns %d..%d of %s: %w", fromSeq, toSeq, chat, err)
	}
	return out, nil
}

// TurnIDsBefore returns the ids of the chat's turns with Seq < beforeSeq,
// in no particular order: what a loaded chat filters a repeated turn start
// by (chat/olderids.go).
func (s *Store) TurnIDsBefore(ctx context.Context, chat string, beforeSeq int) ([]string, error) {
	rows, err := s.db.query(ctx, `SELECT id FROM turns WHERE chat = ? AND seq < ?`, chat, beforeSeq)
	if err != nil {
		return nil, fmt.Errorf("list turn ids of %s before %d: %w", chat, beforeSeq, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list turn ids of %s before %d: %w", chat, beforeSeq, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list turn ids of %s before %d: %w", chat, beforeSeq, err)
	}
	return ids, nil
}

// LastAgentTurnThrough returns the chat's newest turn with Seq <= seq that
// was not a local ! command (one its backend saw); ok is false when there
// is none. A rewind or a fork cuts the backend where that turn ended.
func (s *Store) LastAgentTurnThrough(ctx context.Context, chat string, seq int) (TurnRecord, bool, error) {
	row := s.db.queryRow(ctx, `SELECT `+turnColumns+` FROM turns
		WHERE chat = ? AND seq <= ? AND command = 0 ORDER BY seq DESC LIMIT 1`, chat, seq)
	r, err := scanTurn(row)
	if errors.Is(err, sql.ErrNoRows) {
		return TurnRecord{}, false, nil
	}
	if err != nil {
		return TurnRecord{}, false, fmt.Errorf("last backend turn of %s through %d: %w", chat, seq, err)
	}
	return r, true, nil
}

// LastTurns returns the chat's newest limit turns, oldest first. It returns
// none when limit <= 0.
func (s *Store) LastTurns(ctx context.Context, chat string, limit int) ([]TurnRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := s.queryTurns(ctx, `SELECT `+turnColumns+` FROM turns
		WHERE chat = ? ORDER BY seq DESC LIMIT ?`, chat, limit)
	if err != nil {
		return nil, fmt.Errorf("list last %d turns of %s: %w", limit, chat, err)
	}
	slices.Reverse(out)
	return out, nil
}

// CountTurns reports how many turns the chat has stored.
func (s *Store) CountTurns(ctx context.Context, chat string) (int, error) {
	var n int
	if err := s.db.queryRow(ctx, `SELECT count(*) FROM turns WHERE chat = ?`, chat).Scan(&n); err != nil {
		return 0, fmt.Errorf("count turns of %s: %w", chat, err)
	}
	return n, nil
}

// TruncateTurns deletes the chat's turns with Seq > keepThroughSeq; -1 (or
// less) deletes them all.
func (s *Store) TruncateTurns(ctx context.Context, chat string, keepThroughSeq int) error {
	if _, err := s.db.writeExec(ctx, `DELETE FROM turns WHERE chat = ? AND seq > ?`, chat, keepThroughSeq); err != nil {
		return fmt.Errorf("truncate turns of %s after %d: %w", chat, keepThroughSeq, err)
	}
	return nil
}

// RunningTurns returns every turn stored as TurnRunning, across all chats,
// ordered by chat then Seq. At startup these are turns a crash interrupted.
func (s *Store) RunningTurns(ctx context.Context) ([]TurnRecord, error) {
	out, err := s.queryTurns(ctx, runningTurnsQuery)
	if err != nil {
		return nil, fmt.Errorf("list running turns: %w", err)
	}
	// Ordered here, not by SQL: an ORDER BY chat, seq makes SQLite walk
	// turns_by_seq, every stored turn, instead of the partial index of the
	// few running ones (start-up would grow with history).
	slices.SortFunc(out, func(a, b TurnRecord) int {
		if a.Chat != b.Chat {
			return strings.Compare(a.Chat, b.Chat)
		}
		return a.Seq - b.Seq
	})
	return out, nil
}

// runningTurnsQuery reads the running turns through turns_running, the
// partial index that holds only them.
const runningTurnsQuery = `SELECT ` + turnColumns + ` FROM turns INDEXED BY turns_running WHERE state = 'running'`

func (s *Store) queryTurns(ctx context.Context, query string, args ...any) ([]TurnRecord, error) {
	rows, err := s.db.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TurnRecord
	for rows.Next() {
		r, err := scanTurn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func scanTurn(sc scanner) (TurnRecord, error) {
	var (
		r       TurnRecord
		command int
		started sql.NullInt64
		body    []byte
	)
	if err := sc.Scan(&r.Chat, &r.ID, &r.Seq, &r.State, &r.Sender, &r.Point, &command, &started, &body); err != nil {
		return TurnRecord{}, err
	}
	r.Command = command != 0
	r.StartedAt = timeFrom(started)
	r.Body = rawFrom(body)
	return r, nil
}

// LastCompleteTurn names the chat's newest turn that ended complete ("" when
// none did): where a #chat: pointer to the chat ends.
func (s *Store) LastCompleteTurn(ctx context.Context, chat string) (string, error) {
	var id string
	err := s.db.queryRow(ctx, `SELECT id FROM turns WHERE chat = ? AND state = 'complete'
		ORDER BY seq DESC LIMIT 1`, chat).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("last complete turn of %s: %w", chat, err)
	}
	return id, nil
}
