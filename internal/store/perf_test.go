package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// body200 is a finished turn of 200 response parts, as the chat actor
// marshals one.
// body200 is a finished turn of 200 markdown parts, as json.Marshal writes
// it (so the store takes it as a chat actor's: BodyMarshalled).
func body200() json.RawMessage {
	parts := make([]string, 200)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"kind":"markdown","id":"p%d","content":%q}`, i, strings.Repeat("streamed text ", 6))
	}
	return json.RawMessage(`{"id":"t","message":{"text":"make it so","origin":{"kind":"user"}},"responseParts":[` +
		strings.Join(parts, ",") + `],"state":"complete","startedAt":"2026-12-04T00:00:00Z"}`)
}

// body200Text is body200's search text: its message and its parts, one
// per line.
func body200Text() string {
	var b strings.Builder
	b.WriteString("make it so")
	for range 200 {
		b.WriteString("\n" + strings.Repeat("streamed text ", 6))
	}
	return b.String()
}

// BenchmarkPersist200Parts: storing a finished 200-part turn the way a chat
// actor does (Commit of PutTurn, with its text for the search index)
// against a raw autocommit INSERT of the same row through database/sql, in
// the same run; ratio = store / raw (docs/PERFORMANCE.md, goal ≤ 1.2).
func BenchmarkPersist200Parts(b *testing.B) {
	const rows = 300
	body := body200()
	ctx := context.Background()
	for range b.N {
		s, _ := openTemp(b)
		_, chat := seed(b, s, "ahp://s/persist")
		started := time.Now()
		t0 := time.Now()
		for i := range rows {
			text := body200Text() // as chat.SearchText writes it
			r := TurnRecord{Chat: chat, ID: fmt.Sprintf("turn-%d", i), Seq: i, State: TurnComplete, Sender: "user:1", Point: "p", StartedAt: started, Body: body, BodyMarshalled: true, SearchText: &text}
			if err := s.Commit(ctx, func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, r) }); err != nil {
				b.Fatal(err)
			}
		}
		store := time.Since(t0)

		db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "raw.db")))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE turns (chat TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL,
			sender TEXT NOT NULL, point TEXT NOT NULL, command INTEGER NOT NULL, started_at INTEGER, body TEXT,
			PRIMARY KEY (chat, id)) STRICT`); err != nil {
			b.Fatal(err)
		}
		raw := string(body)
		t1 := time.Now()
		for i := range rows {
			if _, err := db.Exec(`INSERT INTO turns (chat, id, seq, state, sender, point, command, started_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				chat, fmt.Sprintf("turn-%d", i), i, "complete", "user:1", "p", 0, started.UnixNano(), raw); err != nil {
				b.Fatal(err)
			}
		}
		rawTime := time.Since(t1)
		db.Close()
		b.ReportMetric(float64(store.Microseconds())/rows, "ahpd-µs/turn")
		b.ReportMetric(float64(rawTime.Microseconds())/rows, "raw-µs/turn")
		b.ReportMetric(float64(store)/float64(rawTime), "ratio")
	}
}
