package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// logSink is a slog.Handler that keeps every record so tests can assert on
// what was logged, and echoes it to the test log.
type logSink struct {
	t  testing.TB
	mu sync.Mutex // guards records
	// records holds "LEVEL message key=value ..." lines.
	records []string
}

func (h *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSink) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logSink) WithGroup(string) slog.Handler            { return h }
func (h *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, b.String())
	h.mu.Unlock()
	if _, bench := h.t.(*testing.B); !bench {
		h.t.Log(b.String())
	}
	return nil
}

// count reports how many records contain substr.
func (h *logSink) count(substr string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if strings.Contains(r, substr) {
			n++
		}
	}
	return n
}

// openAt opens the store at path and closes it when the test ends.
func openAt(t testing.TB, path string) (*Store, *logSink) {
	t.Helper()
	sink := &logSink{t: t}
	s, err := Open(path, slog.New(sink))
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, sink
}

func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ahpd.db")
	s, _ := openAt(t, path)
	return s, path
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// at is a fixed instant with nanoseconds, to show times keep full precision.
func at(minute int) time.Time {
	return time.Date(2025, 3, 14, 15, minute, 26, 535897932, time.UTC)
}

func sampleSession(uri string, minute int) SessionRecord {
	return SessionRecord{
		URI:                uri,
		Provider:           "claude",
		Title:              "Session " + uri,
		CreatedAt:          at(0),
		ModifiedAt:         at(minute),
		WorkingDirectories: []string{"/home/u/project", "/tmp/other dir"},
		DefaultChat:        uri + "/chat/main",
		Flags:              FlagIsRead | FlagIsArchived,
		Owner:              "user:42",
		Config:             json.RawMessage(`{"model":"opus","effort":"high"}`),
		Meta:               json.RawMessage(`{"tags":["a","b"]}`),
	}
}

func sampleChat(session, uri string, position int) ChatRecord {
	return ChatRecord{
		URI:                uri,
		Session:            session,
		Position:           position,
		Title:              "Chat " + uri,
		TitleProvisional:   true,
		Origin:             json.RawMessage(`{"kind":"fork","chat":"x","turnId":"t1"}`),
		WorkingDirectories: []string{"/w"},
		ConversationID:     "conv-" + uri,
		Draft:              json.RawMessage(`{"text":"half a thought"}`),
		Interactivity:      "interactive",
		Flags:              FlagIsRead,
		CreatedAt:          at(1),
		ModifiedAt:         at(2),
		Meta:               json.RawMessage(`{"x":1}`),
	}
}

func sampleTurn(chat string, seq int) TurnRecord {
	return TurnRecord{
		Chat:      chat,
		ID:        fmt.Sprintf("turn-%04d", seq),
		Seq:       seq,
		State:     TurnComplete,
		Sender:    "user:42",
		Point:     fmt.Sprintf("point-%d", seq),
		StartedAt: at(3).Add(time.Duration(seq) * time.Second),
		Body:      json.RawMessage(fmt.Sprintf(`{"id":"turn-%04d","parts":[{"kind":"text","text":"hello %d"}]}`, seq, seq)),
	}
}

// seed stores one session with one chat and returns their URIs.
func seed(t testing.TB, s *Store, session string) (string, string) {
	t.Helper()
	ctx := context.Background()
	chat := session + "/chat/1"
	must(t, s.PutSession(ctx, sampleSession(session, 5)))
	must(t, s.PutChat(ctx, sampleChat(session, chat, 0)))
	return session, chat
}

func seqs(turns []TurnRecord) []int {
	out := make([]int, len(turns))
	for i, r := range turns {
		out[i] = r.Seq
	}
	return out
}

func seqRange(from, to int) []int {
	out := []int{}
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestOpenCreatesDirectoryAndSetsPragmas(t *testing.T) {
	// A name with URI-special characters must still land at that exact path.
	path := filepath.Join(t.TempDir(), "nested", "deeper", "a b?c#d%20e.db")
	s, _ := openAt(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not at %s: %v", path, err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	ctx := context.Background()
	// Pragmas are per connection: check several connections at once.
	conns := make([]*sql.Conn, maxOpenConns)
	for i := range conns {
		c, err := s.db.pool.Conn(ctx)
		must(t, err)
		conns[i] = c
	}
	for i, c := range conns {
		for pragma, want := range map[string]string{
			"journal_mode": "wal",
			"foreign_keys": "1",
			"synchronous":  "1", // NORMAL
			"busy_timeout": fmt.Sprint(busyTimeout.Milliseconds()),
		} {
			var got string
			must(t, c.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got))
			if got != want {
				t.Errorf("conn %d: PRAGMA %s = %q, want %q", i, pragma, got, want)
			}
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

func TestSessionRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()

	full := sampleSession("ahp://s/full", 10)
	bare := SessionRecord{URI: "ahp://s/bare"} // nil lists and JSON stay nil
	empty := SessionRecord{URI: "ahp://s/empty", WorkingDirectories: []string{}, Config: json.RawMessage(`null`), ModifiedAt: at(20)}
	for _, r := range []SessionRecord{full, bare, empty} {
		must(t, s.PutSession(ctx, r))
		got, ok, err := s.Session(ctx, r.URI)
		must(t, err)
		if !ok {
			t.Fatalf("Session(%s): not found", r.URI)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("Session(%s) round trip:\n got %+v\nwant %+v", r.URI, got, r)
		}
	}

	if _, ok, err := s.Session(ctx, "ahp://s/none"); err != nil || ok {
		t.Errorf("Session(missing) = ok %v, err %v; want not found, no error", ok, err)
	}

	// Upsert replaces every field.
	full.Title, full.Flags, full.Config, full.ModifiedAt = "renamed", 0, nil, at(30)
	must(t, s.PutSession(ctx, full))
	got, _, err := s.Session(ctx, full.URI)
	must(t, err)
	if !reflect.DeepEqual(got, full) {
		t.Errorf("after upsert:\n got %+v\nwant %+v", got, full)
	}

	// Most recently modified first; a session never modified comes last.
	all, err := s.Sessions(ctx)
	must(t, err)
	var uris []string
	for _, r := range all {
		uris = append(uris, r.URI)
	}
	want := []string{"ahp://s/full", "ahp://s/empty", "ahp://s/bare"}
	if !reflect.DeepEqual(uris, want) {
		t.Errorf("Sessions order = %v, want %v", uris, want)
	}

	if err := s.PutSession(ctx, SessionRecord{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutSession(no uri) = %v, want ErrInvalid", err)
	}
	err = s.PutSession(ctx, SessionRecord{URI: "ahp://s/bad", Meta: json.RawMessage(`{nope`)})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "put session ahp://s/bad") {
		t.Errorf("PutSession(bad JSON) = %v, want ErrInvalid naming the session", err)
	}
}

func TestChatRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	session := "ahp://s/1"
	must(t, s.PutSession(ctx, sampleSession(session, 1)))

	// Stored out of order; listed by Position.
	c2 := sampleChat(session, session+"/chat/b", 2)
	c0 := sampleChat(session, session+"/chat/a", 0)
	c1 := ChatRecord{URI: session + "/chat/c", Session: session, Position: 1}
	for _, r := range []ChatRecord{c2, c0, c1} {
		must(t, s.PutChat(ctx, r))
		got, ok, err := s.Chat(ctx, r.URI)
		must(t, err)
		if !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("Chat(%s) round trip (ok %v):\n got %+v\nwant %+v", r.URI, ok, got, r)
		}
	}
	list, err := s.Chats(ctx, session, false)
	must(t, err)
	if want := []ChatRecord{c0, c1, c2}; !reflect.DeepEqual(list, want) {
		t.Errorf("Chats = %+v\nwant %+v", list, want)
	}

	// Drafts: set, clear.
	draft := json.RawMessage(`{"text":"new draft","attachments":[]}`)
	must(t, s.SetDraft(ctx, c1.URI, draft))
	got, _, err := s.Chat(ctx, c1.URI)
	must(t, err)
	if string(got.Draft) != string(draft) {
		t.Errorf("draft = %s, want %s", got.Draft, draft)
	}
	must(t, s.SetDraft(ctx, c1.URI, nil))
	if got, _, _ = s.Chat(ctx, c1.URI); got.Draft != nil {
		t.Errorf("draft after clear = %s, want nil", got.Draft)
	}
	if err := s.SetDraft(ctx, "ahp://nope", draft); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetDraft(missing chat) = %v, want ErrNotFound", err)
	}
	if err := s.SetDraft(ctx, c1.URI, json.RawMessage(`{`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetDraft(bad JSON) = %v, want ErrInvalid", err)
	}

	// Closing hides the chat from the default list but keeps it stored.
	must(t, s.CloseChat(ctx, c2.URI, ClosedDelete))
	list, err = s.Chats(ctx, session, false)
	must(t, err)
	if len(list) != 2 || list[0].URI != c0.URI || list[1].URI != c1.URI {
		t.Errorf("Chats without closed = %+v", list)
	}
	list, err = s.Chats(ctx, session, true)
	must(t, err)
	if len(list) != 3 || !list[2].Closed || list[2].ClosedMode != ClosedDelete {
		t.Errorf("Chats with closed: %+v", list)
	}
	if err := s.CloseChat(ctx, c0.URI, "shred"); !errors.Is(err, ErrInvalid) {
		t.Errorf("CloseChat(bad mode) = %v, want ErrInvalid", err)
	}
	if err := s.CloseChat(ctx, "ahp://nope", ClosedHidden); !errors.Is(err, ErrNotFound) {
		t.Errorf("CloseChat(missing) = %v, want ErrNotFound", err)
	}

	// A chat needs its session.
	err = s.PutChat(ctx, ChatRecord{URI: "ahp://orphan", Session: "ahp://s/none"})
	if err == nil || !strings.Contains(err.Error(), "put chat ahp://orphan") {
		t.Errorf("PutChat(orphan) = %v, want a foreign key error naming the chat", err)
	}

	// Upserting the session does not touch its chats (no delete-and-insert).
	must(t, s.PutSession(ctx, sampleSession(session, 9)))
	list, err = s.Chats(ctx, session, true)
	must(t, err)
	if len(list) != 3 {
		t.Errorf("after session upsert: %d chats, want 3", len(list))
	}

	must(t, s.DeleteChat(ctx, c0.URI))
	must(t, s.DeleteChat(ctx, c0.URI)) // idempotent
	if _, ok, _ := s.Chat(ctx, c0.URI); ok {
		t.Errorf("chat still stored after DeleteChat")
	}
}

func TestTurnRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")
	_, other := seed(t, s, "ahp://s/2")

	running := TurnRecord{Chat: chat, ID: "t0", Seq: 0, State: TurnRunning, StartedAt: at(4),
		Body: json.RawMessage(`{"id":"t0","parts":[]}`)}
	command := TurnRecord{Chat: other, ID: "c0", Seq: 0, State: TurnRunning, Command: true}
	for _, r := range []TurnRecord{running, command} {
		must(t, s.PutTurn(ctx, r))
		got, ok, err := s.Turn(ctx, r.Chat, r.ID)
		must(t, err)
		if !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("Turn(%s/%s) round trip (ok %v):\n got %+v\nwant %+v", r.Chat, r.ID, ok, got, r)
		}
	}

	// A crash leaves both running.
	got, err := s.RunningTurns(ctx)
	must(t, err)
	if len(got) != 2 || got[0].ID != "t0" || got[1].ID != "c0" {
		t.Errorf("RunningTurns = %+v", got)
	}

	// The turn ends: the same (chat, id) is rewritten with its final state.
	done := running
	done.State, done.Sender, done.Point = TurnComplete, "user:7", "uuid-abc"
	done.Body = json.RawMessage(`{"id":"t0","parts":[{"kind":"text","text":"done"}]}`)
	must(t, s.PutTurn(ctx, done))
	all, err := s.Turns(ctx, chat)
	must(t, err)
	if len(all) != 1 || !reflect.DeepEqual(all[0], done) {
		t.Errorf("Turns after end = %+v, want [%+v]", all, done)
	}
	got, err = s.RunningTurns(ctx)
	must(t, err)
	if len(got) != 1 || got[0].ID != "c0" {
		t.Errorf("RunningTurns after end = %+v", got)
	}

	for name, r := range map[string]TurnRecord{
		"bad state": {Chat: chat, ID: "x", State: "paused"},
		"no id":     {Chat: chat, State: TurnComplete},
		"negative":  {Chat: chat, ID: "x", Seq: -1, State: TurnComplete},
		"bad body":  {Chat: chat, ID: "x", Seq: 5, State: TurnComplete, Body: json.RawMessage(`[1,`)},
	} {
		if err := s.PutTurn(ctx, r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: PutTurn = %v, want ErrInvalid", name, err)
		}
	}
	// Seq is unique within a chat.
	err = s.PutTurn(ctx, TurnRecord{Chat: chat, ID: "other", Seq: 0, State: TurnComplete})
	if err == nil || !strings.Contains(err.Error(), "put turn "+chat+"/other") {
		t.Errorf("PutTurn(duplicate seq) = %v, want an error naming the turn", err)
	}
	// A turn needs its chat.
	if err := s.PutTurn(ctx, TurnRecord{Chat: "ahp://none", ID: "x", State: TurnComplete}); err == nil {
		t.Errorf("PutTurn(missing chat) succeeded")
	}
	if _, ok, err := s.Turn(ctx, chat, "missing"); ok || err != nil {
		t.Errorf("Turn(missing) = ok %v, err %v", ok, err)
	}
}

func TestSettings(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	if _, ok, err := s.GetSetting(ctx, "host.id"); ok || err != nil {
		t.Fatalf("GetSetting(unset) = ok %v, err %v", ok, err)
	}
	must(t, s.SetSetting(ctx, "host.id", "abc"))
	must(t, s.SetSetting(ctx, "host.id", "def"))
	must(t, s.SetSetting(ctx, "empty", ""))
	if v, ok, err := s.GetSetting(ctx, "host.id"); v != "def" || !ok || err != nil {
		t.Errorf("GetSetting = %q, %v, %v; want def", v, ok, err)
	}
	if v, ok, err := s.GetSetting(ctx, "empty"); v != "" || !ok || err != nil {
		t.Errorf("GetSetting(empty) = %q, %v, %v; want set and empty", v, ok, err)
	}
}

// TestRestartKeepsEverything writes every kind of record, some directly and
// some through the queue, closes the store and checks a fresh Open sees all
// of it, including the running-turn marker a crash would leave.
func TestRestartKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	ctx := context.Background()
	s, _ := openAt(t, path)

	sessions := []SessionRecord{sampleSession("ahp://s/a", 1), sampleSession("ahp://s/b", 2)}
	var chats []ChatRecord
	turns := map[string][]TurnRecord{}
	for _, sr := range sessions {
		must(t, s.PutSession(ctx, sr))
		for i := range 3 {
			c := sampleChat(sr.URI, fmt.Sprintf("%s/chat/%d", sr.URI, i), i)
			if i == 2 {
				c.Closed, c.ClosedMode = true, ClosedHidden
			}
			chats = append(chats, c)
			s.Enqueue(func(ctx context.Context, s *Store) error { return s.PutChat(ctx, c) })
			for seq := range 4 {
				tr := sampleTurn(c.URI, seq)
				if seq == 3 {
					tr.State = TurnRunning
				}
				turns[c.URI] = append(turns[c.URI], tr)
				s.Enqueue(func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, tr) })
			}
		}
	}
	s.Enqueue(func(ctx context.Context, s *Store) error { return s.SetSetting(ctx, "host.id", "h1") })
	must(t, s.Close()) // drains the queue
	if st := s.Stats(); st.WriteErrors != 0 || st.Pending != 0 {
		t.Fatalf("stats after close: %+v", st)
	}

	s, _ = openAt(t, path)
	gotSessions, err := s.Sessions(ctx)
	must(t, err)
	wantSessions := []SessionRecord{sessions[1], sessions[0]} // most recent first
	if !reflect.DeepEqual(gotSessions, wantSessions) {
		t.Errorf("sessions after restart:\n got %+v\nwant %+v", gotSessions, wantSessions)
	}
	var gotChats []ChatRecord
	for _, sr := range wantSessions {
		list, err := s.Chats(ctx, sr.URI, true)
		must(t, err)
		gotChats = append(gotChats, list...)
	}
	wantChats := append(append([]ChatRecord{}, chats[3:]...), chats[:3]...)
	if !reflect.DeepEqual(gotChats, wantChats) {
		t.Errorf("chats after restart:\n got %+v\nwant %+v", gotChats, wantChats)
	}
	for chat, want := range turns {
		got, err := s.Turns(ctx, chat)
		must(t, err)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("turns of %s after restart:\n got %+v\nwant %+v", chat, got, want)
		}
	}
	running, err := s.RunningTurns(ctx)
	must(t, err)
	if len(running) != len(chats) {
		t.Errorf("RunningTurns after restart: %d, want one per chat (%d)", len(running), len(chats))
	}
	if v, ok, err := s.GetSetting(ctx, "host.id"); v != "h1" || !ok || err != nil {
		t.Errorf("setting after restart = %q, %v, %v", v, ok, err)
	}
}

type appliedMigration struct {
	version   int
	name      string
	appliedAt int64
}

func appliedMigrations(t *testing.T, s *Store) []appliedMigration {
	t.Helper()
	rows, err := s.db.pool.Query(`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	must(t, err)
	defer rows.Close()
	var out []appliedMigration
	for rows.Next() {
		var m appliedMigration
		must(t, rows.Scan(&m.version, &m.name, &m.appliedAt))
		out = append(out, m)
	}
	must(t, rows.Err())
	return out
}

func TestMigrationsRunOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	ctx := context.Background()
	s, sink := openAt(t, path)
	first := appliedMigrations(t, s)
	if len(first) != len(migrations) {
		t.Fatalf("applied %d migrations, want %d", len(first), len(migrations))
	}
	if v, err := s.SchemaVersion(ctx); v != len(migrations) || err != nil {
		t.Errorf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
	}
	if n := sink.count("applied migration"); n != len(migrations) {
		t.Errorf("first open logged %d migrations, want %d", n, len(migrations))
	}
	must(t, s.Close())

	// The migrations' CREATE TABLEs would fail if run again; reopening must
	// succeed and leave the records exactly as they were.
	s, sink = openAt(t, path)
	if again := appliedMigrations(t, s); !reflect.DeepEqual(again, first) {
		t.Errorf("reopen changed schema_migrations:\n got %+v\nwant %+v", again, first)
	}
	if n := sink.count("applied migration"); n != 0 {
		t.Errorf("reopen applied %d migrations, want 0", n)
	}
}

func TestMigrationsApplyInOrderOneTransactionEach(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	m1 := migration{version: 1, name: "one", stmts: []string{`CREATE TABLE one (x INTEGER)`}}
	bad := migration{version: 2, name: "two", stmts: []string{
		`CREATE TABLE two (x INTEGER)`,
		`CREATE TABLE one (x INTEGER)`, // already exists: the migration fails halfway
	}}
	if _, err := openWith(path, nil, []migration{m1, bad}); err == nil || !strings.Contains(err.Error(), "migration 2 (two)") {
		t.Fatalf("open with failing migration 2 = %v, want an error naming it", err)
	}

	// Migration 1 committed; migration 2 rolled back entirely.
	good := migration{version: 2, name: "two", stmts: []string{`CREATE TABLE two (x INTEGER)`}}
	m3 := migration{version: 3, name: "three", stmts: []string{`INSERT INTO two (x) SELECT 1 FROM one`}}
	s, err := openWith(path, nil, []migration{m1, good, m3})
	must(t, err)
	defer s.Close()
	got := appliedMigrations(t, s)
	if len(got) != 3 || got[0].name != "one" || got[1].name != "two" || got[2].name != "three" {
		t.Errorf("applied = %+v, want one, two, three", got)
	}

	if _, err := openWith(filepath.Join(t.TempDir(), "x.db"), nil, []migration{m1, m3}); err == nil {
		t.Errorf("a migration list with a gap was accepted")
	}
}

func TestFutureSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	s, _ := openAt(t, path)
	future := len(migrations) + 1
	_, err := s.db.pool.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)`, future)
	must(t, err)
	must(t, s.Close())

	_, err = Open(path, nil)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open(newer database) = %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{path, fmt.Sprintf("version %d", future), fmt.Sprintf("up to %d", len(migrations))} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestDeleteSessionCascades(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	doomed, doomedChat := seed(t, s, "ahp://s/doomed")
	secondChat := doomed + "/chat/2"
	must(t, s.PutChat(ctx, sampleChat(doomed, secondChat, 1)))
	kept, keptChat := seed(t, s, "ahp://s/kept")
	for _, chat := range []string{doomedChat, secondChat, keptChat} {
		for seq := range 5 {
			must(t, s.PutTurn(ctx, sampleTurn(chat, seq)))
		}
	}

	must(t, s.DeleteSession(ctx, doomed))
	must(t, s.DeleteSession(ctx, doomed)) // idempotent

	if _, ok, _ := s.Session(ctx, doomed); ok {
		t.Errorf("session still stored")
	}
	for _, chat := range []string{doomedChat, secondChat} {
		if _, ok, _ := s.Chat(ctx, chat); ok {
			t.Errorf("chat %s survived its session", chat)
		}
		if n, err := s.CountTurns(ctx, chat); n != 0 || err != nil {
			t.Errorf("chat %s: %d turns survived (err %v)", chat, n, err)
		}
	}
	if _, ok, _ := s.Session(ctx, kept); !ok {
		t.Errorf("other session deleted")
	}
	if n, _ := s.CountTurns(ctx, keptChat); n != 5 {
		t.Errorf("other chat has %d turns, want 5", n)
	}

	// DeleteChat cascades to the chat's turns too.
	must(t, s.DeleteChat(ctx, keptChat))
	if n, _ := s.CountTurns(ctx, keptChat); n != 0 {
		t.Errorf("DeleteChat left %d turns", n)
	}
}

func TestTruncateTurns(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")
	_, other := seed(t, s, "ahp://s/2")
	for seq := range 10 {
		must(t, s.PutTurn(ctx, sampleTurn(chat, seq)))
		must(t, s.PutTurn(ctx, sampleTurn(other, seq)))
	}

	must(t, s.TruncateTurns(ctx, chat, 4))
	got, err := s.Turns(ctx, chat)
	must(t, err)
	if !reflect.DeepEqual(seqs(got), seqRange(0, 5)) {
		t.Errorf("after truncate through 4: seqs %v", seqs(got))
	}
	must(t, s.TruncateTurns(ctx, chat, 9)) // nothing past the end
	if n, _ := s.CountTurns(ctx, chat); n != 5 {
		t.Errorf("truncate past the end removed turns: %d left", n)
	}

	// The transcript continues from the cut: seq 5 is free again, with a new id.
	next := sampleTurn(chat, 5)
	next.ID = "after-rewind"
	must(t, s.PutTurn(ctx, next))

	must(t, s.TruncateTurns(ctx, chat, -1))
	if n, _ := s.CountTurns(ctx, chat); n != 0 {
		t.Errorf("truncate -1 left %d turns", n)
	}
	if n, _ := s.CountTurns(ctx, other); n != 10 {
		t.Errorf("truncating one chat touched another: %d turns left", n)
	}
	must(t, s.PutTurn(ctx, sampleTurn(chat, 0)))
}

func TestPagingBoundaries(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")
	const total, page = 500, 50
	s.Enqueue(func(ctx context.Context, s *Store) error {
		for seq := range total {
			if err := s.PutTurn(ctx, sampleTurn(chat, seq)); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, s.Flush(ctx))
	if n, err := s.CountTurns(ctx, chat); n != total || err != nil {
		t.Fatalf("CountTurns = %d, %v", n, err)
	}

	last, err := s.LastTurns(ctx, chat, page)
	must(t, err)
	if !reflect.DeepEqual(seqs(last), seqRange(total-page, total)) {
		t.Fatalf("LastTurns(%d) = %v", page, seqs(last))
	}

	// Page back to the first turn, as a client scrolling up would.
	collected := last
	before := last[0].Seq
	pages := 1
	for {
		older, err := s.TurnsBefore(ctx, chat, before, page)
		must(t, err)
		if len(older) == 0 {
			break
		}
		pages++
		if len(older) != page {
			t.Errorf("page %d has %d turns, want %d", pages, len(older), page)
		}
		if older[len(older)-1].Seq != before-1 {
			t.Errorf("page %d ends at %d, want %d (right before %d)", pages, older[len(older)-1].Seq, before-1, before)
		}
		collected = append(older, collected...)
		before = older[0].Seq
	}
	if pages != total/page {
		t.Errorf("paged %d pages, want %d", pages, total/page)
	}
	if !reflect.DeepEqual(seqs(collected), seqRange(0, total)) {
		t.Errorf("paging back collected %d turns, not 0..%d in order", len(collected), total-1)
	}

	for _, tc := range []struct {
		name             string
		beforeSeq, limit int
		want             []int
	}{
		{"partial first page", 30, page, seqRange(0, 30)},
		{"right after the first", 1, page, []int{0}},
		{"before the first", 0, page, []int{}},
		{"before past the end", total + 100, page, seqRange(total-page, total)},
		{"zero limit", 200, 0, []int{}},
		{"negative limit", 200, -1, []int{}},
	} {
		got, err := s.TurnsBefore(ctx, chat, tc.beforeSeq, tc.limit)
		must(t, err)
		if !reflect.DeepEqual(seqs(got), tc.want) {
			t.Errorf("%s: TurnsBefore(%d, %d) = %v, want %v", tc.name, tc.beforeSeq, tc.limit, seqs(got), tc.want)
		}
	}
	all, err := s.LastTurns(ctx, chat, total*2)
	must(t, err)
	if len(all) != total {
		t.Errorf("LastTurns(more than stored) = %d turns, want %d", len(all), total)
	}
	if none, _ := s.LastTurns(ctx, chat, 0); len(none) != 0 {
		t.Errorf("LastTurns(0) = %d turns", len(none))
	}
	if none, _ := s.LastTurns(ctx, "ahp://unknown", page); len(none) != 0 {
		t.Errorf("LastTurns(unknown chat) = %d turns", len(none))
	}
}

// TestEnqueueOrder has many goroutines enqueue at once. Each op records a
// ticket taken in the same critical section as its Enqueue call, so the run
// order must be exactly the ticket order. The ops share a slice with no lock:
// under -race this also checks that Enqueue happens before its op runs, ops
// run one at a time, and they all happen before Flush returns.
func TestEnqueueOrder(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	const writers, each = 16, 100
	chats := make([]string, writers)
	for w := range writers {
		_, chats[w] = seed(t, s, fmt.Sprintf("ahp://s/%d", w))
	}

	var (
		ticketMu sync.Mutex // guards next, and makes ticket order = Enqueue order
		next     int
		ran      []int // written only by ops
	)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for seq := range each {
				ticketMu.Lock()
				ticket := next
				next++
				s.Enqueue(func(ctx context.Context, s *Store) error {
					ran = append(ran, ticket)
					return s.PutTurn(ctx, sampleTurn(chats[w], seq))
				})
				ticketMu.Unlock()
			}
		})
	}
	wg.Wait()
	must(t, s.Flush(ctx))

	if len(ran) != writers*each {
		t.Fatalf("%d ops ran, want %d", len(ran), writers*each)
	}
	for i, ticket := range ran {
		if ticket != i {
			t.Fatalf("op %d ran with ticket %d: out of order", i, ticket)
		}
	}
	for _, chat := range chats {
		got, err := s.Turns(ctx, chat)
		must(t, err)
		if !reflect.DeepEqual(seqs(got), seqRange(0, each)) {
			t.Errorf("chat %s: turns %v", chat, seqs(got))
		}
	}
	if st := s.Stats(); st.Enqueued != writers*each || st.Written != writers*each || st.Pending != 0 || st.WriteErrors != 0 {
		t.Errorf("stats = %+v", st)
	}
}

// gate returns an op that blocks the writer until release is called, and
// a channel closed once the op has started.
func gate() (op Op, started <-chan struct{}, release func()) {
	start, open := make(chan struct{}), make(chan struct{})
	op = func(context.Context, *Store) error {
		close(start)
		<-open
		return nil
	}
	return op, start, sync.OnceFunc(func() { close(open) })
}

func TestFlush(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")

	must(t, s.Flush(ctx)) // nothing queued: returns at once

	block, started, release := gate()
	defer release()
	s.Enqueue(block)
	<-started
	for seq := range 9 {
		s.Enqueue(func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, sampleTurn(chat, seq)) })
	}
	if p := s.Stats().Pending; p != 10 {
		t.Errorf("Pending with the writer blocked = %d, want 10", p)
	}

	// The writer is stuck: Flush gives up when its context does.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with a blocked writer = %v, want DeadlineExceeded", err)
	}
	if n, _ := s.CountTurns(ctx, chat); n != 0 {
		t.Fatalf("%d turns written while the writer was blocked", n)
	}

	release()
	must(t, s.Flush(ctx))
	// Everything enqueued before Flush has run by the time it returns.
	if n, _ := s.CountTurns(ctx, chat); n != 9 {
		t.Errorf("after Flush: %d turns, want 9", n)
	}
	if st := s.Stats(); st.Pending != 0 || st.Written != 10 || st.MaxPending != 10 {
		t.Errorf("stats after Flush = %+v", st)
	}
}

func TestWriteErrorsAreLoggedAndCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	s, sink := openAt(t, path)
	ctx := context.Background()

	s.Enqueue(func(ctx context.Context, s *Store) error {
		return s.PutTurn(ctx, TurnRecord{Chat: "ahp://missing", ID: "t9", State: TurnComplete})
	})
	s.Enqueue(func(context.Context, *Store) error { panic("boom") })
	ran := false
	s.Enqueue(func(context.Context, *Store) error { ran = true; return nil })
	must(t, s.Flush(ctx))

	if !ran {
		t.Errorf("the writer stopped after a failing op")
	}
	if st := s.Stats(); st.WriteErrors != 2 || st.Written != 1 {
		t.Errorf("stats = %+v, want 2 write errors and 1 written", st)
	}
	if n := sink.count("put turn ahp://missing/t9"); n != 1 {
		t.Errorf("the failed op's error was logged %d times, want once with its context", n)
	}
	if n := sink.count("store_test.go"); n != 2 {
		t.Errorf("%d error logs name the op's Enqueue site, want 2", n)
	}
	if n := sink.count("boom"); n != 1 {
		t.Errorf("panic logged %d times, want 1", n)
	}
}

func TestHighWaterLogsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	s, sink := openAt(t, path)
	s.queue.highWater = 5 // before any Enqueue; the writer only reads it after one

	block, started, release := gate()
	defer release()
	s.Enqueue(block)
	<-started
	for range 50 {
		s.Enqueue(func(context.Context, *Store) error { return nil })
	}
	if n := sink.count("queue is backing up"); n != 1 {
		t.Errorf("logged the backlog %d times, want once", n)
	}
	release()
	must(t, s.Flush(context.Background()))
	if st := s.Stats(); st.Written != 51 || st.MaxPending != 51 {
		t.Errorf("stats = %+v: no op may be dropped", st)
	}
}

func TestCloseDrains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	ctx := context.Background()
	s, sink := openAt(t, path)
	_, chat := seed(t, s, "ahp://s/1")

	const n = 1000
	block, started, release := gate()
	s.Enqueue(block)
	<-started
	for seq := range n {
		s.Enqueue(func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, sampleTurn(chat, seq)) })
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the queue drained", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	must(t, <-closed)
	must(t, s.Close()) // twice is fine

	// After Close: Flush has nothing to wait for, and a late op is refused
	// loudly, never run against a closed database.
	must(t, s.Flush(ctx))
	if _, err := s.Turns(ctx, chat); !errors.Is(err, ErrClosed) {
		t.Errorf("Turns after Close = %v, want ErrClosed", err)
	}
	s.Enqueue(func(context.Context, *Store) error { t.Error("op ran after Close"); return nil })
	if st := s.Stats(); st.Refused != 1 || st.Written != n+1 {
		t.Errorf("stats after Close = %+v", st)
	}
	if c := sink.count("write refused"); c != 1 {
		t.Errorf("refused op logged %d times, want 1", c)
	}

	s, _ = openAt(t, path)
	if got, err := s.CountTurns(ctx, chat); got != n || err != nil {
		t.Errorf("after reopen: %d turns (%v), want %d", got, err, n)
	}
}

func TestContextHonoured(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.PutTurn(cancelled, sampleTurn(chat, 0)); !errors.Is(err, context.Canceled) {
		t.Errorf("PutTurn(cancelled) = %v, want context.Canceled", err)
	}
	if _, err := s.Turns(cancelled, chat); !errors.Is(err, context.Canceled) {
		t.Errorf("Turns(cancelled) = %v, want context.Canceled", err)
	}

	// Hold the write token, as a long write transaction would.
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.db.withWrite(ctx, func(tx *sql.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding

	// A second writer waits for the token only as long as its context allows.
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	err := s.PutTurn(short, sampleTurn(chat, 0))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "put turn "+chat+"/turn-0000") {
		t.Errorf("PutTurn while another write holds the lock = %v, want DeadlineExceeded naming the turn", err)
	}
	// Readers are not blocked by a write in progress (WAL, several connections).
	readCtx, cancelRead := context.WithTimeout(ctx, 2*time.Second)
	defer cancelRead()
	if _, err := s.Sessions(readCtx); err != nil {
		t.Errorf("Sessions during a write: %v", err)
	}
	close(release)
	must(t, <-done)
	must(t, s.PutTurn(ctx, sampleTurn(chat, 0)))
}

// TestRunningTurnsUsesPartialIndex: start-up's read of the turns a crash
// left running goes through the partial index of running turns, not a scan
// of every stored turn (issue 18: it was SCAN turns USING INDEX
// turns_by_seq, 78% of a cold start at 100,000 turns).
func TestRunningTurnsUsesPartialIndex(t *testing.T) {
	s, _ := openTemp(t)
	rows, err := s.db.pool.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+runningTurnsQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "turns_running") || strings.Contains(got, "turns_by_seq") {
		t.Fatalf("plan %q", got)
	}
}

// TestTurnBodyChecked: a turn body is checked as JSON unless the record
// says json.Marshal made it (a chat actor's records); both read back as
// written.
func TestTurnBodyChecked(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/body")
	bad := TurnRecord{Chat: chat, ID: "bad", State: TurnComplete, Body: json.RawMessage(`{"id":`)}
	if err := s.PutTurn(ctx, bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutTurn(bad JSON) = %v, want ErrInvalid", err)
	}
	body, err := json.Marshal(map[string]any{"id": "t1", "state": "complete"})
	must(t, err)
	for i, marshalled := range []bool{false, true} {
		r := TurnRecord{Chat: chat, ID: fmt.Sprintf("t%d", i), Seq: i, State: TurnComplete, Body: body, BodyMarshalled: marshalled}
		must(t, s.PutTurn(ctx, r))
	}
	turns, err := s.Turns(ctx, chat)
	must(t, err)
	if len(turns) != 2 {
		t.Fatalf("%d turns stored, want 2", len(turns))
	}
	for _, got := range turns {
		if string(got.Body) != string(body) || got.BodyMarshalled {
			t.Errorf("turn %s read back %s (marshalled %v), want %s", got.ID, got.Body, got.BodyMarshalled, body)
		}
	}
}

// TestTurnsBetweenAndLastAgentTurn: a chat's window reads a range of its
// stored turns by seq, the ids of those before a seq (its filter of older
// turns), and the newest turn its backend saw at or before a seq (a !
// command's turn is not one).
func TestTurnsBetweenAndLastAgentTurn(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	_, chat := seed(t, s, "ahp://s/1")
	for seq := range 10 {
		r := sampleTurn(chat, seq)
		r.Command = seq >= 4 && seq <= 6
		r.Point = fmt.Sprintf("p%d", seq)
		must(t, s.PutTurn(ctx, r))
	}
	for _, tc := range []struct {
		from, to int
		want     []int
	}{
		{2, 5, seqRange(2, 5)}, {0, 10, seqRange(0, 10)}, {8, 20, seqRange(8, 10)}, {5, 5, []int{}}, {6, 2, []int{}},
	} {
		got, err := s.TurnsBetween(ctx, chat, tc.from, tc.to)
		must(t, err)
		if !reflect.DeepEqual(seqs(got), tc.want) {
			t.Errorf("TurnsBetween(%d, %d) = %v, want %v", tc.from, tc.to, seqs(got), tc.want)
		}
	}
	for _, tc := range []struct{ before, want int }{{0, 0}, {3, 3}, {10, 10}, {20, 10}, {-1, 0}} {
		ids, err := s.TurnIDsBefore(ctx, chat, tc.before)
		must(t, err)
		slices.Sort(ids)
		var want []string
		for seq := range tc.want {
			want = append(want, sampleTurn(chat, seq).ID)
		}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("TurnIDsBefore(%d) = %v, want %v", tc.before, ids, want)
		}
	}
	for _, tc := range []struct {
		through int
		want    string
	}{{9, "p9"}, {6, "p3"}, {4, "p3"}, {0, "p0"}, {-1, ""}} {
		r, ok, err := s.LastAgentTurnThrough(ctx, chat, tc.through)
		must(t, err)
		if ok != (tc.want != "") || r.Point != tc.want {
			t.Errorf("LastAgentTurnThrough(%d) = %q %v, want %q", tc.through, r.Point, ok, tc.want)
		}
	}
}
