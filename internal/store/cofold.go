package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// CofoldMessage is one stored message of a cofold conversation: its
// position, the host turn it was written in, and cofold's own JSON.
type CofoldMessage struct {
	Seq  int
	Turn string
	Body json.RawMessage
}

// Cofold are the store's cofold rows (Store.Cofold): the conversations
// cofold, the in-process agent, keeps here (internal/agent/cofold).
type Cofold struct{ s *Store }

// Cofold is the store's cofold rows.
func (s *Store) Cofold() Cofold { return Cofold{s} }

// Messages returns a cofold conversation's messages in order.
func (c Cofold) Messages(ctx context.Context, conversation string) ([]CofoldMessage, error) {
	rows, err := c.s.db.pool.QueryContext(ctx,
		`SELECT seq, turn, body FROM cofold_messages WHERE conversation = ? ORDER BY seq`, conversation)
	if err != nil {
		return nil, fmt.Errorf("read cofold conversation %s: %w", conversation, err)
	}
	defer rows.Close()
	var out []CofoldMessage
	for rows.Next() {
		var m CofoldMessage
		var body string
		if err := rows.Scan(&m.Seq, &m.Turn, &body); err != nil {
			return nil, fmt.Errorf("read cofold conversation %s: %w", conversation, err)
		}
		m.Body = json.RawMessage(body)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cofold conversation %s: %w", conversation, err)
	}
	return out, nil
}

// Append stores msgs at the end of a cofold conversation in one
// transaction; a seq already stored is an error, not an overwrite.
func (c Cofold) Append(ctx context.Context, conversation string, msgs []CofoldMessage) error {
	for _, m := range msgs {
		if m.Seq < 0 || !json.Valid(m.Body) {
			return fmt.Errorf("append to cofold conversation %s: %w: message %d", conversation, ErrInvalid, m.Seq)
		}
	}
	err := c.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		for _, m := range msgs {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO cofold_messages (conversation, seq, turn, body) VALUES (?, ?, ?, ?)`,
				conversation, m.Seq, m.Turn, string(m.Body)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append to cofold conversation %s: %w", conversation, err)
	}
	return nil
}

// Cut keeps the first keep messages of a conversation and deletes the
// rest (a rewind).
func (c Cofold) Cut(ctx context.Context, conversation string, keep int) error {
	if _, err := c.s.db.writeExec(ctx, `DELETE FROM cofold_messages WHERE conversation = ? AND seq >= ?`, conversation, keep); err != nil {
		return fmt.Errorf("cut cofold conversation %s at %d: %w", conversation, keep, err)
	}
	return nil
}

// Fork replaces conversation to with the first keep messages of from, in
// one transaction (a fork; opening it again before its first turn gives
// the same copy).
func (c Cofold) Fork(ctx context.Context, from, to string, keep int) error {
	err := c.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM cofold_messages WHERE conversation = ?`, to); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO cofold_messages (conversation, seq, turn, body)
			SELECT ?, seq, turn, body FROM cofold_messages WHERE conversation = ? AND seq < ?`, to, from, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("fork cofold conversation %s into %s at %d: %w", from, to, keep, err)
	}
	return nil
}

// Delete removes a conversation's messages.
func (c Cofold) Delete(ctx context.Context, conversation string) error {
	if _, err := c.s.db.writeExec(ctx, `DELETE FROM cofold_messages WHERE conversation = ?`, conversation); err != nil {
		return fmt.Errorf("delete cofold conversation %s: %w", conversation, err)
	}
	return nil
}
