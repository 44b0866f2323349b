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
// against a raw autocommit INSERT of the same row through database/sql
// (SQLite's own checkpointing, inside the commits), in the same run; ratio
// = store / raw, in time from the first commit to the last
// (docs/PERFORMANCE.md, goal ≤ 1.2). The CPU figures also hold what
// closing each database costs (copying the rest of its WAL back). Three
// rounds of 300 turns, each in fresh databases (300 turns: the search
// index's batch, which a commit does not wait for, is not due yet). A
// smaller round, not counted, warms both first: the first to run in a
// fresh process paid for its warming alone.
func BenchmarkPersist200Parts(b *testing.B) {
	const rows, rounds = 300, 3
	persistRound(b, 30)
	var got persistTimes
	for range b.N * rounds {
		r := persistRound(b, rows)
		got.store += r.store
		got.storeCPU += r.storeCPU
		got.raw += r.raw
		got.rawCPU += r.rawCPU
	}
	n := float64(b.N * rounds * rows)
	b.ReportMetric(float64(got.store.Microseconds())/n, "ahpd-µs/turn")
	b.ReportMetric(float64(got.raw.Microseconds())/n, "raw-µs/turn")
	b.ReportMetric(float64(got.store)/float64(got.raw), "ratio")
	b.ReportMetric(float64(got.storeCPU.Microseconds())/n, "ahpd-cpu-µs/turn")
	b.ReportMetric(float64(got.rawCPU.Microseconds())/n, "raw-cpu-µs/turn")
}

// persistTimes are one round's wall and CPU times, the store's and the raw
// insert's.
type persistTimes struct{ store, storeCPU, raw, rawCPU time.Duration }

// persistRound stores rows 200-part turns in a fresh store, then inserts
// them raw in a fresh database.
func persistRound(b *testing.B, rows int) persistTimes {
	var out persistTimes
	body := body200()
	ctx := context.Background()
	s, _ := openTemp(b)
	_, chat := seed(b, s, "ahp://s/persist")
	started := time.Now()
	// The text a chat actor gives with the turn (chat.SearchText): the
	// actor's work, before its Commit.
	text := body200Text()
	t0, cpu0 := time.Now(), processCPU(b)
	for i := range rows {
		r := TurnRecord{Chat: chat, ID: fmt.Sprintf("turn-%d", i), Seq: i, State: TurnComplete, Sender: "user:1", Point: "p", StartedAt: started, Body: body, BodyMarshalled: true, SearchText: &text}
		if err := s.Commit(ctx, func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, r) }); err != nil {
			b.Fatal(err)
		}
	}
	out.store = time.Since(t0)
	// The store copies its WAL back off the commits' path (checkpoint.go):
	// that work counts in its CPU, and is over before the raw insert runs
	// (Close waits for it, then copies the rest back, as the raw
	// database's Close below does).
	must(b, s.Close())
	out.storeCPU = processCPU(b) - cpu0

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
	t1, cpu1 := time.Now(), processCPU(b)
	for i := range rows {
		if _, err := db.Exec(`INSERT INTO turns (chat, id, seq, state, sender, point, command, started_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			chat, fmt.Sprintf("turn-%d", i), i, "complete", "user:1", "p", 0, started.UnixNano(), raw); err != nil {
			b.Fatal(err)
		}
	}
	out.raw = time.Since(t1)
	must(b, db.Close())
	out.rawCPU = processCPU(b) - cpu1
	return out
}

// BenchmarkSearchIndexBatch: what indexing costs a turn off its commit's
// path, by how many turns one indexing transaction takes (searchindex.go):
// committed turns, small ones (benchBody, 5,000 of them, so FTS5 merges
// its segments as it would over a day) or 200-part ones (body200, 400:
// their texts all fit searchTextsMax), with their texts kept as a chat
// actor's commits leave them, indexed in transactions of 1 turn (what
// indexing in each turn's own transaction cost), 50 or 500 (a 200-part
// turn's batch stops at searchBatchBytes, about 60 turns). cpu-µs/turn is
// the process's CPU (getrusage) over the indexing alone.
func BenchmarkSearchIndexBatch(b *testing.B) {
	for _, kind := range []struct {
		name  string
		body  json.RawMessage
		text  string
		turns int
	}{{"small", benchBody, benchText, 5000}, {"200parts", body200(), body200Text(), 400}} {
		for _, batch := range []int{1, 50, searchBatchMax} {
			b.Run(fmt.Sprintf("%s/batch%d", kind.name, batch), func(b *testing.B) {
				ctx := context.Background()
				turns := kind.turns
				var wall, cpu time.Duration
				for range b.N {
					b.StopTimer()
					s, _ := openTemp(b)
					s.search.mu.Lock()
					s.search.held = true // indexed below, timed
					s.search.mu.Unlock()
					_, chat := seed(b, s, "ahp://s/index")
					ops := make([]Op, turns)
					for i := range ops {
						r := TurnRecord{Chat: chat, ID: fmt.Sprintf("turn-%d", i), Seq: i, State: TurnComplete, Sender: "user:1",
							Point: "p", StartedAt: time.Now(), Body: kind.body, BodyMarshalled: true, SearchText: &kind.text}
						ops[i] = func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, r) }
					}
					for from := 0; from < turns; from += 50 {
						if err := s.CommitAll(ctx, ops[from:from+50]...); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					t0, cpu0 := time.Now(), processCPU(b)
					for {
						_, more, err := s.search.indexPending(ctx, batch)
						if err != nil {
							b.Fatal(err)
						}
						if !more {
							break
						}
					}
					wall += time.Since(t0)
					cpu += processCPU(b) - cpu0
					b.StopTimer()
					if st := s.Stats(); st.SearchIndexed != uint64(turns) {
						b.Fatalf("indexed %d turns, want %d", st.SearchIndexed, turns)
					}
					s.Close()
				}
				b.ReportMetric(float64(wall.Microseconds())/float64(b.N*turns), "µs/turn")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*turns), "cpu-µs/turn")
			})
		}
	}
}
