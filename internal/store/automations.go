package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// AutomationRecord is one automation of the catalogue.
type AutomationRecord struct {
	Resource string
	// Owner is the sender reference of who created it; its runs start
	// sessions as them.
	Owner      string
	Definition json.RawMessage
	CreatedAt  time.Time
	ModifiedAt time.Time
	// NextRunAt is the earliest schedule occurrence not yet evaluated
	// (zero: none).
	NextRunAt time.Time
}

// AutomationRunRecord is one run of an automation.
type AutomationRunRecord struct {
	Resource   string
	Automation string
	// Seq orders an automation's runs, newest highest.
	Seq       int64
	RequestID string
	Terminal  bool
	State     json.RawMessage
}

// Automations are the store's automation rows (Store.Automations).
type Automations struct{ s *Store }

// Automations is the store's automation rows.
func (s *Store) Automations() Automations { return Automations{s} }

// Put stores a, replacing the row of the same resource.
func (as Automations) Put(ctx context.Context, a AutomationRecord) error {
	def, err := rawValue("automation definition", a.Definition)
	if err != nil || def == nil {
		return fmt.Errorf("put automation %s: %w", a.Resource, errors.Join(err, ErrInvalid))
	}
	_, err = as.s.db.writeExec(ctx, `INSERT INTO automations (resource, owner, definition, created_at, modified_at, next_run_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner, definition = excluded.definition,
			modified_at = excluded.modified_at, next_run_at = excluded.next_run_at`,
		a.Resource, a.Owner, def, a.CreatedAt.UnixNano(), a.ModifiedAt.UnixNano(), timeValue(a.NextRunAt))
	if err != nil {
		return fmt.Errorf("put automation %s: %w", a.Resource, err)
	}
	return nil
}

// Delete removes an automation and its runs; false when there was none.
func (as Automations) Delete(ctx context.Context, resource string) (bool, error) {
	res, err := as.s.db.writeExec(ctx, `DELETE FROM automations WHERE resource = ?`, resource)
	if err != nil {
		return false, fmt.Errorf("delete automation %s: %w", resource, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// List returns every automation, oldest first.
func (as Automations) List(ctx context.Context) ([]AutomationRecord, error) {
	rows, err := as.s.db.query(ctx, `SELECT resource, owner, definition, created_at, modified_at, next_run_at
		FROM automations ORDER BY created_at, resource`)
	if err != nil {
		return nil, fmt.Errorf("list automations: %w", err)
	}
	defer rows.Close()
	var out []AutomationRecord
	for rows.Next() {
		var a AutomationRecord
		var def []byte
		var created, modified int64
		var next sql.NullInt64
		if err := rows.Scan(&a.Resource, &a.Owner, &def, &created, &modified, &next); err != nil {
			return nil, fmt.Errorf("list automations: %w", err)
		}
		a.Definition = rawFrom(def)
		a.CreatedAt, a.ModifiedAt = time.Unix(0, created).UTC(), time.Unix(0, modified).UTC()
		a.NextRunAt = timeFrom(next)
		out = append(out, a)
	}
	return out, rows.Err()
}

// PutRun stores r, replacing the row of the same resource, and deletes
// the automation's oldest terminal runs beyond keep.
func (as Automations) PutRun(ctx context.Context, r AutomationRunRecord, keep int) error {
	state, err := rawValue("automation run state", r.State)
	if err != nil || state == nil {
		return fmt.Errorf("put run %s: %w", r.Resource, errors.Join(err, ErrInvalid))
	}
	return as.s.db.withWrite(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO automation_runs (resource, automation, seq, request_id, terminal, state)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (resource) DO UPDATE SET terminal = excluded.terminal, state = excluded.state`,
			r.Resource, r.Automation, r.Seq, r.RequestID, boolValue(r.Terminal), state)
		if err != nil {
			return fmt.Errorf("put run %s: %w", r.Resource, err)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM automation_runs WHERE automation = ? AND terminal = 1 AND resource NOT IN (
			SELECT resource FROM automation_runs WHERE automation = ? AND terminal = 1 ORDER BY seq DESC LIMIT ?)`,
			r.Automation, r.Automation, keep)
		if err != nil {
			return fmt.Errorf("trim runs of %s: %w", r.Automation, err)
		}
		return nil
	})
}

// Runs returns an automation's runs, newest first.
func (as Automations) Runs(ctx context.Context, automation string) ([]AutomationRunRecord, error) {
	rows, err := as.s.db.query(ctx, `SELECT resource, automation, seq, request_id, terminal, state
		FROM automation_runs WHERE automation = ? ORDER BY seq DESC`, automation)
	if err != nil {
		return nil, fmt.Errorf("runs of %s: %w", automation, err)
	}
	defer rows.Close()
	var out []AutomationRunRecord
	for rows.Next() {
		var r AutomationRunRecord
		var terminal int
		var state []byte
		if err := rows.Scan(&r.Resource, &r.Automation, &r.Seq, &r.RequestID, &terminal, &state); err != nil {
			return nil, fmt.Errorf("runs of %s: %w", automation, err)
		}
		r.Terminal, r.State = terminal != 0, rawFrom(state)
		out = append(out, r)
	}
	return out, rows.Err()
}
