package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrSlugTaken: a bot holds the slug, or held it and was deleted (a slug is
// never reused).
var ErrSlugTaken = errors.New("slug taken")

// BotRecord is one bot: a named, standing agent whose chat hands its work
// to a session of its own (internal/agent/bot).
type BotRecord struct {
	Slug         string
	Name         string
	Instructions string
	// Agent is the provider the work session runs on, Model its model.
	Agent string
	Model string
	// Folder is where the work session runs (a local path).
	Folder string
	// Owner is the sender reference the work session is started as.
	Owner string
	// Session is the work session's URI; Linked says it was an existing
	// session of the owner rather than one made for the bot.
	Session   string
	Linked    bool
	CreatedAt time.Time
}

// Bots are the store's bot rows (Store.Bots): live bots, and the
// tombstones that keep a deleted bot's slug taken.
type Bots struct{ s *Store }

// Bots is the store's bot rows.
func (s *Store) Bots() Bots { return Bots{s} }

// Add stores a new bot. A slug held now or ever before is ErrSlugTaken.
func (bs Bots) Add(ctx context.Context, b BotRecord) error {
	return bs.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM bots WHERE slug = ?`, b.Slug).Scan(&n); err != nil {
			return fmt.Errorf("add bot %s: %w", b.Slug, err)
		}
		if n > 0 {
			return fmt.Errorf("add bot %s: %w", b.Slug, ErrSlugTaken)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO bots (slug, name, instructions, agent, model, folder, owner, session, linked, created_at, deleted)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
			b.Slug, b.Name, b.Instructions, b.Agent, b.Model, b.Folder, b.Owner, b.Session, boolInt(b.Linked), b.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("add bot %s: %w", b.Slug, err)
		}
		return nil
	})
}

// SetSession records the bot's work session.
func (bs Bots) SetSession(ctx context.Context, slug, session string, linked bool) error {
	_, err := bs.s.db.writeExec(ctx, `UPDATE bots SET session = ?, linked = ? WHERE slug = ? AND deleted = 0`, session, boolInt(linked), slug)
	if err != nil {
		return fmt.Errorf("set session of bot %s: %w", slug, err)
	}
	return nil
}

const botColumns = `slug, name, instructions, agent, model, folder, owner, session, linked, created_at`

func scanBot(sc scanner) (BotRecord, error) {
	var b BotRecord
	var linked int
	var created int64
	if err := sc.Scan(&b.Slug, &b.Name, &b.Instructions, &b.Agent, &b.Model, &b.Folder, &b.Owner, &b.Session, &linked, &created); err != nil {
		return BotRecord{}, err
	}
	b.Linked = linked != 0
	b.CreatedAt = time.Unix(0, created).UTC()
	return b, nil
}

// Get returns the live bot of slug; ok is false for none or a deleted one.
func (bs Bots) Get(ctx context.Context, slug string) (BotRecord, bool, error) {
	b, err := scanBot(bs.s.db.queryRow(ctx, `SELECT `+botColumns+` FROM bots WHERE slug = ? AND deleted = 0`, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return BotRecord{}, false, nil
	}
	if err != nil {
		return BotRecord{}, false, fmt.Errorf("bot %s: %w", slug, err)
	}
	return b, true, nil
}

// List lists the live bots by slug.
func (bs Bots) List(ctx context.Context) ([]BotRecord, error) {
	rows, err := bs.s.db.query(ctx, `SELECT `+botColumns+` FROM bots WHERE deleted = 0 ORDER BY slug`)
	if err != nil {
		return nil, fmt.Errorf("list bots: %w", err)
	}
	defer rows.Close()
	var out []BotRecord
	for rows.Next() {
		b, err := scanBot(rows)
		if err != nil {
			return nil, fmt.Errorf("list bots: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list bots: %w", err)
	}
	return out, nil
}

// Delete leaves a tombstone of a live bot: its slug stays taken. false:
// no live bot had the slug.
func (bs Bots) Delete(ctx context.Context, slug string) (bool, error) {
	res, err := bs.s.db.writeExec(ctx, `UPDATE bots SET deleted = 1 WHERE slug = ? AND deleted = 0`, slug)
	if err != nil {
		return false, fmt.Errorf("delete bot %s: %w", slug, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("delete bot %s: %w", slug, err)
	}
	return n > 0, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
