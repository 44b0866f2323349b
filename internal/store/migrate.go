package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// A migration moves the schema from version-1 to version. Migrations are
// numbered from 1 with no gaps and never edited once released: a change to the
// schema is a new entry at the end of the list.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations is the schema's history, oldest first. schema_migrations records
// each one applied (version, name, applied_at); the highest version there is
// the database's schema version.
var migrations = []migration{
	{
		version: 1,
		name:    "sessions, chats, turns, settings",
		stmts: []string{
			`CREATE TABLE sessions (
				uri                 TEXT PRIMARY KEY,
				provider            TEXT NOT NULL,
				title               TEXT NOT NULL,
				created_at          INTEGER,
				modified_at         INTEGER,
				working_directories TEXT NOT NULL,
				default_chat        TEXT NOT NULL,
				flags               INTEGER NOT NULL,
				owner               TEXT NOT NULL,
				config              TEXT,
				meta                TEXT
			) STRICT`,
			`CREATE INDEX sessions_by_modified ON sessions (modified_at DESC)`,
			`CREATE TABLE chats (
				uri                 TEXT PRIMARY KEY,
				session             TEXT NOT NULL REFERENCES sessions (uri) ON DELETE CASCADE,
				position            INTEGER NOT NULL,
				title               TEXT NOT NULL,
				title_provisional   INTEGER NOT NULL,
				origin              TEXT,
				working_directories TEXT NOT NULL,
				conversation_id     TEXT NOT NULL,
				draft               TEXT,
				interactivity       TEXT NOT NULL,
				flags               INTEGER NOT NULL,
				closed              INTEGER NOT NULL,
				closed_mode         TEXT NOT NULL,
				created_at          INTEGER,
				modified_at         INTEGER,
				meta                TEXT
			) STRICT`,
			`CREATE INDEX chats_by_session ON chats (session, position)`,
			// (chat, seq) is unique: a transcript has one turn per position,
			// which is what makes the paging queries well defined.
			`CREATE TABLE turns (
				chat       TEXT NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
				id         TEXT NOT NULL,
				seq        INTEGER NOT NULL CHECK (seq >= 0),
				state      TEXT NOT NULL CHECK (state IN ('running', 'complete', 'cancelled', 'error')),
				sender     TEXT NOT NULL,
				point      TEXT NOT NULL,
				command    INTEGER NOT NULL,
				started_at INTEGER,
				body       TEXT,
				PRIMARY KEY (chat, id)
			) STRICT`,
			`CREATE UNIQUE INDEX turns_by_seq ON turns (chat, seq)`,
			`CREATE INDEX turns_running ON turns (chat) WHERE state = 'running'`,
			`CREATE TABLE settings (
				key   TEXT PRIMARY KEY,
				value TEXT NOT NULL
			) STRICT`,
		},
	},
	{
		version: 2,
		name:    "cofold conversations",
		stmts: []string{
			// cofold's own conversation, one row per message, by the
			// conversation id a chat writes under (not the chat's URI: a
			// fork copies it and a deleted chat may leave it).
			`CREATE TABLE cofold_messages (
				conversation TEXT NOT NULL,
				seq          INTEGER NOT NULL CHECK (seq >= 0),
				turn         TEXT NOT NULL,
				body         TEXT NOT NULL,
				PRIMARY KEY (conversation, seq)
			) STRICT`,
		},
	},
	{
		version: 3,
		name:    "bots",
		stmts: []string{
			// A deleted bot stays as a tombstone (deleted = 1) so its slug
			// is never reused (bots.go).
			`CREATE TABLE bots (
				slug         TEXT PRIMARY KEY,
				name         TEXT NOT NULL,
				instructions TEXT NOT NULL,
				agent        TEXT NOT NULL,
				model        TEXT NOT NULL,
				folder       TEXT NOT NULL,
				owner        TEXT NOT NULL,
				session      TEXT NOT NULL,
				linked       INTEGER NOT NULL,
				created_at   INTEGER NOT NULL,
				deleted      INTEGER NOT NULL
			) STRICT`,
		},
	},
	{
		version: 4,
		name:    "changesets",
		stmts: []string{
			// What an agent changed on disk, one row per file a turn
			// changed (changesets.go); contents by their sha256, so the
			// same bytes before one turn and after another are kept once.
			// A NULL hash is a side that did not exist (created, deleted)
			// or was not kept (skipped says why).
			`CREATE TABLE changeset_contents (
				hash TEXT PRIMARY KEY,
				data BLOB NOT NULL
			) STRICT`,
			`CREATE TABLE changeset_files (
				chat          TEXT NOT NULL,
				turn          TEXT NOT NULL,
				path          TEXT NOT NULL,
				seq           INTEGER NOT NULL,
				tool_call     TEXT NOT NULL,
				tool          TEXT NOT NULL,
				before_exists INTEGER NOT NULL,
				before_hash   TEXT,
				after_exists  INTEGER NOT NULL,
				after_hash    TEXT,
				added         INTEGER NOT NULL,
				removed       INTEGER NOT NULL,
				reviewed      INTEGER NOT NULL,
				skipped       TEXT NOT NULL,
				PRIMARY KEY (chat, turn, path)
			) STRICT`,
			`CREATE INDEX changeset_files_by_chat ON changeset_files (chat, seq)`,
		},
	},
	{
		version: 5,
		name:    "automations",
		stmts: []string{
			// The ahp-automations:// catalogue (automations.go): each
			// automation's definition as the JSON clients sent, who made it
			// (its runs start sessions as them), and the earliest schedule
			// occurrence not yet evaluated (NULL: none).
			`CREATE TABLE automations (
				resource    TEXT PRIMARY KEY,
				owner       TEXT NOT NULL,
				definition  TEXT NOT NULL,
				created_at  INTEGER NOT NULL,
				modified_at INTEGER NOT NULL,
				next_run_at INTEGER
			) STRICT`,
			// Each run's state as JSON, newest by seq; request_id makes a
			// manual run idempotent ('' for a scheduled one). Terminal runs
			// beyond the history limit are deleted as new ones end.
			`CREATE TABLE automation_runs (
				resource   TEXT PRIMARY KEY,
				automation TEXT NOT NULL REFERENCES automations (resource) ON DELETE CASCADE,
				seq        INTEGER NOT NULL,
				request_id TEXT NOT NULL,
				terminal   INTEGER NOT NULL,
				state      TEXT NOT NULL
			) STRICT`,
			`CREATE INDEX automation_runs_by_automation ON automation_runs (automation, seq DESC)`,
			`CREATE UNIQUE INDEX automation_runs_by_request ON automation_runs (automation, request_id) WHERE request_id != ''`,
		},
	},
	{
		version: 6,
		name:    "sessions in git",
		stmts: []string{
			// A session that works in a git work tree (gitwork.go): where,
			// the commit its branch changes are counted from, and the
			// snapshot of its work tree when it began. A row outlives its
			// session when the session's worktree was kept (kept says why),
			// so ahpd worktrees can list it.
			`CREATE TABLE session_git (
				session       TEXT PRIMARY KEY,
				dir           TEXT NOT NULL,
				source_repo   TEXT NOT NULL,
				worktree      TEXT NOT NULL,
				worktree_root TEXT NOT NULL,
				branch        TEXT NOT NULL,
				base          TEXT NOT NULL,
				start         TEXT NOT NULL,
				created_at    INTEGER NOT NULL,
				disposed_at   INTEGER NOT NULL,
				kept          TEXT NOT NULL
			) STRICT`,
			// The work tree's snapshot as each turn began and ended.
			`CREATE TABLE turn_snapshots (
				session  TEXT NOT NULL,
				turn     TEXT NOT NULL,
				chat     TEXT NOT NULL,
				start    TEXT NOT NULL,
				end_snap TEXT NOT NULL,
				PRIMARY KEY (session, turn)
			) STRICT`,
			// Which files of a git session's changesets a client marked
			// reviewed, by file id.
			`CREATE TABLE changeset_reviews (
				session  TEXT NOT NULL,
				file     TEXT NOT NULL,
				PRIMARY KEY (session, file)
			) STRICT`,
		},
	},
	{
		version: 7,
		name:    "search index",
		// The FTS5 index of turn text and titles, its triggers, and the
		// back-fill of what earlier releases stored (search.go).
		stmts: searchMigration,
	},
}

// migrate brings the schema up to the last of migs, one transaction per
// migration, and refuses a database that is already past it.
func (s *Store) migrate(ctx context.Context, migs []migration) error {
	for i, m := range migs {
		if m.version != i+1 {
			return fmt.Errorf("migration list: entry %d has version %d, want %d", i, m.version, i+1)
		}
	}
	err := s.db.withWrite(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`)
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	current, err := schemaVersion(ctx, s.db.pool)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(migs) {
		return tooNew(current, len(migs))
	}
	for _, m := range migs {
		if current >= m.version {
			continue
		}
		applied := false
		err := s.db.withWrite(ctx, func(tx *sql.Tx) error {
			// Read the version inside the write transaction, so two processes
			// opening one file at once cannot both apply a migration.
			var err error
			current, err = schemaVersion(ctx, tx)
			if err != nil {
				return err
			}
			if current > len(migs) {
				return tooNew(current, len(migs))
			}
			if current >= m.version {
				return nil
			}
			for _, stmt := range m.stmts {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, time.Now().UnixNano()); err != nil {
				return err
			}
			applied = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		if applied {
			s.logger.Info("applied migration", "version", m.version, "name", m.name)
		}
	}
	return nil
}

func tooNew(have, know int) error {
	return fmt.Errorf("%w: database is at version %d, this ahpd knows up to %d; use a newer ahpd or another database file",
		ErrSchemaTooNew, have, know)
}

// SchemaVersion reports the database's schema version (the highest migration
// applied).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	v, err := schemaVersion(ctx, s.db.pool)
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// querier is what both *sql.DB and *sql.Tx offer for reading.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
