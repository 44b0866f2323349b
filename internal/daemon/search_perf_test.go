package daemon_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/host"
	"github.com/ahpd/ahpd/internal/store"
)

// seedSearchable stores sessions × turnsEach finished turns, each saying a
// few dozen words of a 5,000-word vocabulary and answering with as many,
// as a chat actor stores them (with their search text); turn 0 of the
// middle session also says needle.
func seedSearchable(b testing.TB, dataDir string, sessions, turnsEach int, needle string) {
	st, err := store.Open(filepath.Join(dataDir, "ahpd.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", rng.IntN(5000))
		}
		return strings.Join(w, " ")
	}
	for i := range sessions {
		sess := fmt.Sprintf("script:/5ea4c400-0000-4000-8000-%012d", i)
		def := ahp.DefaultChatURI(sess)
		if err := st.PutSession(ctx, store.SessionRecord{URI: sess, Provider: "script", Title: fmt.Sprintf("Session %d", i),
			CreatedAt: now, ModifiedAt: now.Add(time.Duration(i) * time.Second), WorkingDirectories: []string{}, DefaultChat: def}); err != nil {
			b.Fatal(err)
		}
		if err := st.PutChat(ctx, store.ChatRecord{URI: def, Session: sess, Title: fmt.Sprintf("Session %d", i),
			ConversationID: fmt.Sprintf("conv-%d", i), CreatedAt: now, ModifiedAt: now}); err != nil {
			b.Fatal(err)
		}
		ops := make([]store.Op, 0, turnsEach)
		for j := range turnsEach {
			said := words(30)
			if i == sessions/2 && j == 0 {
				said += " " + needle
			}
			turn := ahp.Turn{ID: fmt.Sprintf("t%d", j), Message: ahp.Message{Text: said, Origin: ahp.MessageOrigin{Kind: "user"}},
				ResponseParts: []ahp.ResponsePart{{Kind: ahp.PartMarkdown, ID: "p", Content: words(60)}}, State: ahp.TurnComplete}
			body, err := json.Marshal(turn)
			if err != nil {
				b.Fatal(err)
			}
			text := chat.SearchText(&turn)
			r := store.TurnRecord{Chat: def, ID: turn.ID, Seq: j, State: store.TurnComplete, StartedAt: now,
				Body: body, BodyMarshalled: true, SearchText: &text}
			ops = append(ops, func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, r) })
		}
		if err := st.CommitAll(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
	// Indexed, as a daemon that ran a while has them (a search indexes
	// what its commits only marked).
	if _, err := st.Search(ctx, store.SearchQuery{Text: needle, Turns: true}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSearch10kTurns: x-ahpd/search (what ahpd search sends) over
// the websocket for a word said in one turn of 10,000 stored turns (100
// sessions of 100), answered with its hit and snippet; against the bare
// FTS5 query on the same SQLite file through database/sql (goal < 50 ms a
// search).
func BenchmarkSearch10kTurns(b *testing.B) {
	const needle, searches = "xylophonist", 20
	for range b.N {
		dir := b.TempDir()
		seedSearchable(b, dir, 100, 100, needle)
		d, _ := startOn(b, dir)
		w := dialWatcher(b, d.URL())
		w.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"searcher"}}`)
		w.readUntil(b, `"id":1`)
		start := time.Now()
		for i := range searches {
			id := 10 + i
			w.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"channel":"ahp-root://","query":%q}}`, id, host.MethodSearch, needle))
			for {
				_, data, err := w.ws.ReadMessage()
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Contains(data, []byte(fmt.Sprintf(`"id":%d`, id))) {
					continue
				}
				var res struct {
					Result host.SearchResult `json:"result"`
				}
				if err := json.Unmarshal(data, &res); err != nil || len(res.Result.Items) != 1 || res.Result.Items[0].TurnID != "t0" {
					b.Fatalf("search answered %s (%v)", data, err)
				}
				break
			}
		}
		perSearch := time.Since(start) / searches

		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "ahpd.db")+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for range searches {
			var rowid int64
			var snippet string
			if err := db.QueryRow(`SELECT rowid, snippet(search_index, 0, '[', ']', '…', 24) FROM search_index
				WHERE search_index MATCH ? ORDER BY rank LIMIT 20`, needle).Scan(&rowid, &snippet); err != nil {
				b.Fatal(err)
			}
		}
		raw := time.Since(t0) / searches
		db.Close()
		b.ReportMetric(float64(perSearch.Microseconds())/1000, "ahpd-ms/search")
		b.ReportMetric(float64(raw.Microseconds())/1000, "raw-ms/search")
		b.ReportMetric(float64(perSearch)/float64(raw), "ratio")
	}
}
