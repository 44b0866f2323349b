package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// saidTurn is a finished turn whose user said user and whose agent
// answered answer (a protocol Turn body, as a chat actor stores one).
func saidTurn(chat string, seq int, user, answer string) TurnRecord {
	body := fmt.Sprintf(`{"id":"t%d","message":{"text":%q,"origin":{"kind":"user"}},"responseParts":[`+
		`{"kind":"reasoning","id":"r","content":"thinking about hidden words"},`+
		`{"kind":"toolCall","toolCall":{"toolCallId":"c1","toolName":"bash","status":"completed"}},`+
		`{"kind":"markdown","id":"m","content":%q}],"state":"complete"}`, seq, user, answer)
	return TurnRecord{Chat: chat, ID: fmt.Sprintf("t%d", seq), Seq: seq, State: TurnComplete, Sender: "user:1",
		Body: json.RawMessage(body)}
}

// found is where a query's hits are: "kind session chat turn" each.
func found(t *testing.T, s *Store, q SearchQuery) []string {
	t.Helper()
	hits, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Text, err)
	}
	out := []string{}
	for _, h := range hits {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", h.Kind, h.Session, h.Chat, h.Turn)))
	}
	return out
}

func wantFound(t *testing.T, s *Store, text string, want ...string) {
	t.Helper()
	got := found(t, s, SearchQuery{Text: text, Turns: true})
	if want == nil {
		want = []string{}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Search(%q) = %q, want %q", text, got, want)
	}
}

func TestSearchFindsAFinishedTurnsTextAndSaysWhere(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	sess, chat := seed(t, s, "ahp-session:/s1")
	must(t, s.PutTurn(ctx, saidTurn(chat, 0, "please find the zebra", "the Ångström answer")))

	hits, err := s.Search(ctx, SearchQuery{Text: "zebra", Turns: true})
	must(t, err)
	if len(hits) != 1 {
		t.Fatalf("hits = %+v, want one", hits)
	}
	h := hits[0]
	if h.Kind != HitTurn || h.Session != sess || h.Chat != chat || h.Turn != "t0" ||
		h.Title != "Chat "+chat || h.SessionTitle != "Session "+sess {
		t.Errorf("hit = %+v", h)
	}
	if h.Snippet != "please find the zebra\nthe Ångström answer" || len(h.Matches) != 1 {
		t.Fatalf("snippet %q matches %v", h.Snippet, h.Matches)
	}
	units := utf16.Encode([]rune(h.Snippet))
	if m := h.Matches[0]; string(utf16.Decode(units[m[0]:m[1]])) != "zebra" {
		t.Errorf("match %v marks %q", m, string(utf16.Decode(units[m[0]:m[1]])))
	}
	// The agent's markdown is found, diacritics folded; its reasoning and
	// tool calls are not text the user was told.
	wantFound(t, s, "angstrom", "turn "+sess+" "+chat+" t0")
	wantFound(t, s, "hidden")
	wantFound(t, s, "bash")
}

func TestSearchIndexFollowsTheTurnsCommits(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	sess, chat := seed(t, s, "ahp-session:/s1")
	hit := "turn " + sess + " " + chat + " t0"

	running := saidTurn(chat, 0, "a running gnu", "")
	running.State = TurnRunning
	must(t, s.PutTurn(ctx, running))
	wantFound(t, s, "gnu") // not indexed while it runs

	must(t, s.PutTurn(ctx, saidTurn(chat, 0, "a running gnu", "ended with a yak")))
	wantFound(t, s, "gnu", hit)
	wantFound(t, s, "yak", hit)

	// Rewritten (an edited message): the old words go with the old body.
	must(t, s.PutTurn(ctx, saidTurn(chat, 0, "now an okapi", "")))
	wantFound(t, s, "gnu")
	wantFound(t, s, "okapi", hit)

	// A commit that fails rolls its index rows back with its turn.
	failed := errors.New("the op failed after writing")
	err := s.Commit(ctx, func(ctx context.Context, st *Store) error {
		if err := st.PutTurn(ctx, saidTurn(chat, 1, "an ibex never stored", "")); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("commit = %v", err)
	}
	wantFound(t, s, "ibex")
	must(t, s.Commit(ctx, func(ctx context.Context, st *Store) error {
		return st.PutTurn(ctx, saidTurn(chat, 1, "an ibex stored", ""))
	}))
	wantFound(t, s, "ibex", "turn "+sess+" "+chat+" t1")
	checkIndexAgrees(t, s)
}

func TestSearchIndexFollowsTitles(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	sess, chat := seed(t, s, "ahp-session:/s1")
	// The session's title is its default chat's: one hit for both.
	rec := sampleSession(sess, 5)
	rec.Title, rec.DefaultChat = "Walrus plans", chat
	must(t, s.PutSession(ctx, rec))
	c := sampleChat(sess, chat, 0)
	c.Title = "Walrus plans"
	must(t, s.PutChat(ctx, c))
	wantFound(t, s, "walrus", "chatTitle "+sess+" "+chat)

	c.Title = "Narwhal plans"
	must(t, s.PutChat(ctx, c))
	wantFound(t, s, "walrus", "sessionTitle "+sess)
	wantFound(t, s, "narwhal", "chatTitle "+sess+" "+chat)

	rec.Title = "Narwhal plans"
	must(t, s.PutSession(ctx, rec))
	wantFound(t, s, "walrus")
	wantFound(t, s, "plans", "chatTitle "+sess+" "+chat)
	checkIndexAgrees(t, s)
}

func TestSearchForgetsWhatForkRewindAndDeleteRemove(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	sess, chat := seed(t, s, "ahp-session:/s1")
	for i, word := range []string{"alpha", "bravo", "charlie"} {
		must(t, s.PutTurn(ctx, saidTurn(chat, i, "say "+word, "")))
	}
	// A fork copies turns into a new chat: found in both.
	fork := sess + "/chat/fork"
	must(t, s.PutChat(ctx, sampleChat(sess, fork, 1)))
	turns, err := s.Turns(ctx, chat)
	must(t, err)
	for _, r := range turns[:2] {
		r.Chat = fork
		must(t, s.PutTurn(ctx, r))
	}
	wantFound(t, s, "bravo", "turn "+sess+" "+chat+" t1", "turn "+sess+" "+fork+" t1")

	// A rewind truncates.
	must(t, s.TruncateTurns(ctx, chat, 0))
	wantFound(t, s, "bravo", "turn "+sess+" "+fork+" t1")
	wantFound(t, s, "charlie")
	wantFound(t, s, "alpha", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+fork+" t0")

	// A closed chat is not found; a deleted one is gone from the index.
	must(t, s.CloseChat(ctx, fork, ClosedHidden))
	wantFound(t, s, "alpha", "turn "+sess+" "+chat+" t0")
	must(t, s.DeleteChat(ctx, fork))
	checkIndexAgrees(t, s)

	// Deleting the session cascades to its chats and turns, and the
	// index follows.
	must(t, s.DeleteSession(ctx, sess))
	wantFound(t, s, "alpha")
	checkIndexAgrees(t, s)
	var n int
	must(t, s.db.pool.QueryRow(`SELECT count(*) FROM search_index`).Scan(&n))
	if n != 0 {
		t.Errorf("%d index rows left after the session was deleted", n)
	}
}

func TestSearchBadQueryIsErrBadQuery(t *testing.T) {
	s, _ := openTemp(t)
	_, chat := seed(t, s, "ahp-session:/s1")
	must(t, s.PutTurn(context.Background(), saidTurn(chat, 0, "anything", "")))
	for _, q := range []string{`"unterminated`, `a AND`, `nocolumn:word`, `(`, ` `} {
		_, err := s.Search(context.Background(), SearchQuery{Text: q, Turns: true})
		if !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%q) = %v, want ErrBadQuery", q, err)
		}
	}
	if _, err := s.Search(context.Background(), SearchQuery{Text: "x", Limit: SearchMaxLimit + 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a limit past the bound: %v", err)
	}
}

func TestSearchHonoursLimitVisibilityAndTurns(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	var sessions []string
	for i := range 3 {
		sess, chat := seed(t, s, fmt.Sprintf("ahp-session:/s%d", i))
		sessions = append(sessions, sess)
		for j := range 100 {
			must(t, s.PutTurn(ctx, saidTurn(chat, j, fmt.Sprintf("common word %d", j), "")))
		}
	}
	if got := found(t, s, SearchQuery{Text: "common", Turns: true, Limit: 100}); len(got) != 100 {
		t.Errorf("limit 100: %d hits", len(got))
	}
	if got := found(t, s, SearchQuery{Text: "common", Turns: true}); len(got) != 20 {
		t.Errorf("default limit: %d hits, want 20", len(got))
	}
	// Hidden sessions are skipped, however many matches come before the
	// visible ones.
	only := sessions[2]
	got := found(t, s, SearchQuery{Text: "common", Turns: true, Limit: 100, Visible: func(s string) bool { return s == only }})
	if len(got) != 100 {
		t.Fatalf("visible hits: %d, want 100", len(got))
	}
	for _, h := range got {
		if !strings.Contains(h, only+" ") {
			t.Fatalf("hit %q is not of %s", h, only)
		}
	}
	// Without turns only titles are searched.
	if got := found(t, s, SearchQuery{Text: "common OR chat", Limit: 100}); len(got) != 3 {
		t.Errorf("titles only: %q", got)
	}
}

func TestSearchMigrationIndexesAnEarlierReleasesData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ahpd.db")
	ctx := context.Background()
	old, err := openWith(path, nil, migrations[:6])
	must(t, err)
	sess, chat := seed(t, old, "ahp-session:/s1")
	// The turns as that release wrote them (today's PutTurn writes the
	// index too).
	running := saidTurn(chat, 1, "a crashed quokka", "")
	running.State = TurnRunning
	for _, r := range []TurnRecord{saidTurn(chat, 0, "an old quokka", ""), running} {
		_, err := old.db.pool.Exec(`INSERT INTO turns (`+turnColumns+`) VALUES (?, ?, ?, ?, ?, ?, 0, NULL, ?)`,
			r.Chat, r.ID, r.Seq, r.State, r.Sender, r.Point, string(r.Body))
		must(t, err)
	}
	must(t, old.Close())

	s, _ := openAt(t, path)
	wantFound(t, s, "quokka", "turn "+sess+" "+chat+" t0")
	wantFound(t, s, "session", "chatTitle "+sess+" "+chat, "sessionTitle "+sess)
	checkIndexAgrees(t, s)
	// The running turn is indexed once it is stored ended (a restart
	// ends it).
	running.State = TurnCancelled
	must(t, s.PutTurn(ctx, running))
	wantFound(t, s, "quokka", "turn "+sess+" "+chat+" t0", "turn "+sess+" "+chat+" t1")
}

// checkIndexAgrees checks the index, once caught up, holds exactly one row
// per finished turn and per titled chat and session, with the text they
// hold now, and no marker is left.
func checkIndexAgrees(t *testing.T, s *Store) {
	t.Helper()
	must(t, s.search.catchUp(context.Background()))
	rows, err := s.db.pool.Query(`SELECT count(*) FROM search_index f
		LEFT JOIN turns t ON f.rowid % 4 = 0 AND t.rowid = f.rowid / 4 AND t.state != 'running'
		LEFT JOIN chats c ON f.rowid % 4 = 1 AND c.rowid = f.rowid / 4 AND c.title = f.text
		LEFT JOIN sessions s ON f.rowid % 4 = 2 AND s.rowid = f.rowid / 4 AND s.title = f.text
		WHERE t.rowid IS NULL AND c.rowid IS NULL AND s.rowid IS NULL
		UNION ALL SELECT count(*) FROM turns WHERE state != 'running' AND rowid * 4 NOT IN (SELECT rowid FROM search_index)
		UNION ALL SELECT count(*) FROM chats WHERE title != '' AND rowid * 4 + 1 NOT IN (SELECT rowid FROM search_index)
		UNION ALL SELECT count(*) FROM sessions WHERE title != '' AND rowid * 4 + 2 NOT IN (SELECT rowid FROM search_index)
		UNION ALL SELECT (SELECT count(*) FROM search_pending) +
			(SELECT count(*) FROM turns WHERE rowid > (SELECT turn FROM search_through))`)
	must(t, err)
	defer rows.Close()
	what := []string{"index rows without their source", "finished turns not indexed", "chat titles not indexed", "session titles not indexed", "turns left waiting"}
	for i := 0; rows.Next(); i++ {
		var n int
		must(t, rows.Scan(&n))
		if n != 0 {
			t.Errorf("%s: %d", what[i], n)
		}
	}
	must(t, rows.Err())
}

// TestSearchTextGivenIsIndexed: a writer's SearchText is what the turn is
// found by; a record without one is indexed from its body.
func TestSearchTextGivenIsIndexed(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	sess, chat := seed(t, s, "ahp-session:/s1")
	r := saidTurn(chat, 0, "the body says wombat", "")
	text := "the writer says dingo"
	r.SearchText = &text
	must(t, s.PutTurn(ctx, r))
	wantFound(t, s, "dingo", "turn "+sess+" "+chat+" t0")
	wantFound(t, s, "wombat")
	r.SearchText = nil
	must(t, s.PutTurn(ctx, r))
	wantFound(t, s, "wombat", "turn "+sess+" "+chat+" t0")
	wantFound(t, s, "dingo")
}
