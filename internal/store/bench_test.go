// Benchmarks for the turn write path.
//
// BenchmarkRawSQLiteInsert is the floor: a plain autocommit INSERT through
// database/sql into a table shaped like turns, on a file with the same
// pragmas (WAL, synchronous=NORMAL). BenchmarkPutTurn is the store's
// synchronous path: validation, the JSON check of the body, the writer token,
// BEGIN IMMEDIATE, an upsert with the foreign key check, COMMIT.
//
// Measured (go test -bench . -benchtime 3s -count 3 ./internal/store/,
// linux/amd64, go1.26, modernc.org/sqlite v1.62.0, tmpfs-backed TempDir):
//
//	BenchmarkRawSQLiteInsert   ~ 21 µs/op
//	BenchmarkPutTurn           ~ 31 µs/op    ratio PutTurn/Raw ≈ 1.5
//	BenchmarkEnqueuePutTurn    ~ 0.5 µs/op caller-side (the op itself then
//	                             runs on the writer at PutTurn's cost)
//
// Most of the overhead is the explicit transaction (BEGIN IMMEDIATE and
// COMMIT are two more statements than autocommit) and the foreign key lookup
// of the chat; the Go-side work is small next to them.
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

// benchBody is a protocol Turn of a typical size (about 400 bytes).
var benchBody = json.RawMessage(`{"id":"t","message":{"text":"` + strings.Repeat("please refactor this ", 8) +
	`"},"parts":[{"kind":"text","text":"` + strings.Repeat("done, see the diff ", 8) + `"}],"state":"complete"}`)

func BenchmarkPutTurn(b *testing.B) {
	s, _ := openTemp(b)
	_, chat := seed(b, s, "ahp://s/bench")
	ctx := context.Background()
	started := time.Now()
	seq := 0
	for b.Loop() {
		err := s.PutTurn(ctx, TurnRecord{
			Chat: chat, ID: fmt.Sprintf("turn-%d", seq), Seq: seq, State: TurnComplete,
			Sender: "user:1", Point: "p", StartedAt: started, Body: benchBody,
		})
		if err != nil {
			b.Fatal(err)
		}
		seq++
	}
}

// BenchmarkEnqueuePutTurn measures the write-behind path end to end: ns/op
// includes draining the queue (Flush), so it is the writer's throughput, and
// enqueue-ns/op is what the calling actor itself pays per op.
func BenchmarkEnqueuePutTurn(b *testing.B) {
	s, _ := openTemp(b)
	_, chat := seed(b, s, "ahp://s/bench")
	ctx := context.Background()
	started := time.Now()
	var enqueueTime time.Duration
	seq := 0
	for b.Loop() {
		r := TurnRecord{
			Chat: chat, ID: fmt.Sprintf("turn-%d", seq), Seq: seq, State: TurnComplete,
			Sender: "user:1", Point: "p", StartedAt: started, Body: benchBody,
		}
		t0 := time.Now()
		s.Enqueue(func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, r) })
		enqueueTime += time.Since(t0)
		seq++
		// Drain in bounded rounds so the queue never holds more than a
		// moment's worth of work.
		if seq%1000 == 0 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(enqueueTime.Nanoseconds())/float64(seq), "enqueue-ns/op")
	if st := s.Stats(); st.WriteErrors != 0 {
		b.Fatalf("write errors: %+v", st)
	}
}

func BenchmarkRawSQLiteInsert(b *testing.B) {
	db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "raw.db")))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE turns (
		chat TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL,
		sender TEXT NOT NULL, point TEXT NOT NULL, command INTEGER NOT NULL,
		started_at INTEGER, body TEXT, PRIMARY KEY (chat, id)) STRICT`)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`CREATE UNIQUE INDEX turns_by_seq ON turns (chat, seq)`); err != nil {
		b.Fatal(err)
	}
	started := time.Now().UnixNano()
	body := string(benchBody)
	seq := 0
	for b.Loop() {
		_, err := db.Exec(`INSERT INTO turns (chat, id, seq, state, sender, point, command, started_at, body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			"ahp://s/bench/chat/1", fmt.Sprintf("turn-%d", seq), seq, "complete", "user:1", "p", 0, started, body)
		if err != nil {
			b.Fatal(err)
		}
		seq++
	}
}
