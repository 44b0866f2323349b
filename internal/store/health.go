package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Ping checks that the database answers a query (GET /healthz).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.pool.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping store %s: %w", s.path, err)
	}
	return nil
}

// IntegrityCheck runs SQLite's integrity_check on the database at path,
// opened read-only so it changes nothing and works beside a running
// daemon (`ahpd doctor`). It returns nil when SQLite answers "ok".
func IntegrityCheck(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("integrity check %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("integrity check %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check %s: %w", path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check %s: %w", path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check %s: %w", path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check %s: %s", path, strings.Join(problems, "; "))
	}
	return nil
}
