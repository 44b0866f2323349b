package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The search index: one SQLite FTS5 table, search_index, over every
// finished turn's text (the user's message and the agent's markdown parts),
// every chat's title and every session's title.
//
// A turn is indexed off its commit's path (searchindex.go): FTS5 costs
// mostly per transaction (a segment written each time), which doubled a
// turn's commit when the index was written in it. The statement that
// writes a finished turn writes only a marker too (a search_pending row
// keyed by the turn's rowid, by trigger); the writer indexes marked turns in batches (one transaction each), and
// Search indexes whatever is still marked before it reads, so a search
// always agrees with what is committed. A marker committed with its turn
// survives a crash: the next Open indexes it. A running turn is not
// indexed: its body is rewritten as it streams, and it is indexed once it
// is stored ended.
//
// Titles change rarely and cheaply, and deletes must not leave rows that
// name nothing: triggers on turns, chats and sessions keep those exact in
// the transaction that makes the change, whatever path made it (a rewind
// truncating turns, a session deleted with its chats by cascade).
//
// A row's rowid ties it to its source row: rowid*4 plus the kind below.
// ahpd never runs VACUUM, which may renumber the rowids of these tables; a
// database vacuumed by hand needs the index emptied and back-filled again
// (the searchBackfill statements).
const (
	searchKindTurn         = 0
	searchKindChatTitle    = 1
	searchKindSessionTitle = 2
)

// turnTextSQL is the SQL expression of the text a turn body (a protocol
// Turn as JSON) is searched by: its message's text and its markdown
// response parts, one per line. Tool calls, reasoning and notifications
// are not said to the user as text and are left out.
func turnTextSQL(body string) string {
	return `concat_ws(char(10), json_extract(` + body + `, '$.message.text'),
		(SELECT group_concat(p.value ->> '$.content', char(10) ORDER BY p.key) FROM json_each(` + body + `, '$.responseParts') AS p
			WHERE p.value ->> '$.kind' = 'markdown'))`
}

// searchMigration creates the index, the pending markers and their
// triggers, and indexes what is already stored (a database of an earlier
// release).
//
// Which finished turns wait for the index (searchindex.go): every turn
// past search_through's rowid (a turn written since the last batch read
// that far; a batch indexes those finished and moves the mark past them),
// and the turns marked in search_pending: a turn at or below the mark
// that was stored ended or finished, written again, or written running
// again after the mark passed it, by the triggers below. A new turn, the
// commonest write, costs no marker row (a page more in every commit's
// WAL). The text is the chat actor's, which putTurn keeps in memory for
// the indexer (taking the text out of the body in SQL costs more than the
// rest of a 200-part turn's commit). A deleted turn's row and marker go
// with it.
var searchMigration = []string{
	`CREATE VIRTUAL TABLE search_index USING fts5(text, tokenize = 'unicode61 remove_diacritics 2')`,

	// turn is the marked turn's rowid.
	`CREATE TABLE search_pending (turn INTEGER PRIMARY KEY) STRICT`,
	// turn is the rowid the batches have read through: a finished turn
	// at or below it is indexed, or marked.
	`CREATE TABLE search_through (
		id INTEGER PRIMARY KEY CHECK (id = 0),
		turn INTEGER NOT NULL
	) STRICT`,

	// A rowid at or below the mark can be a new turn's (SQLite reuses the
	// largest rowid when its row is deleted); a turn running when the mark
	// passed it, or indexed, is marked when it is written ended, again, or
	// running again (its row goes). (Not INSERT OR IGNORE: inside the
	// upsert, the upsert's own conflict handling overrides the trigger's.)
	`CREATE TRIGGER turns_search_insert AFTER INSERT ON turns
			WHEN new.state != 'running' AND new.rowid <= (SELECT turn FROM search_through) BEGIN
		INSERT INTO search_pending (turn) SELECT new.rowid
			WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE turn = new.rowid);
	END`,
	`CREATE TRIGGER turns_search_update AFTER UPDATE OF state, body ON turns
			WHEN (new.state != 'running' OR old.state != 'running') AND new.rowid <= (SELECT turn FROM search_through) BEGIN
		INSERT INTO search_pending (turn) SELECT new.rowid
			WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE turn = new.rowid);
	END`,
	`CREATE TRIGGER turns_search_delete AFTER DELETE ON turns BEGIN
		DELETE FROM search_pending WHERE turn = old.rowid;
		DELETE FROM search_index WHERE rowid = old.rowid * 4 AND old.state != 'running';
	END`,

	`CREATE TRIGGER chats_search_insert AFTER INSERT ON chats WHEN new.title != '' BEGIN
		INSERT INTO search_index (rowid, text) VALUES (new.rowid * 4 + 1, new.title);
	END`,
	`CREATE TRIGGER chats_search_update AFTER UPDATE OF title ON chats WHEN old.title IS NOT new.title BEGIN
		DELETE FROM search_index WHERE rowid = old.rowid * 4 + 1;
		INSERT INTO search_index (rowid, text) SELECT new.rowid * 4 + 1, new.title WHERE new.title != '';
	END`,
	`CREATE TRIGGER chats_search_delete AFTER DELETE ON chats BEGIN
		DELETE FROM search_index WHERE rowid = old.rowid * 4 + 1;
	END`,

	`CREATE TRIGGER sessions_search_insert AFTER INSERT ON sessions WHEN new.title != '' BEGIN
		INSERT INTO search_index (rowid, text) VALUES (new.rowid * 4 + 2, new.title);
	END`,
	`CREATE TRIGGER sessions_search_update AFTER UPDATE OF title ON sessions WHEN old.title IS NOT new.title BEGIN
		DELETE FROM search_index WHERE rowid = old.rowid * 4 + 2;
		INSERT INTO search_index (rowid, text) SELECT new.rowid * 4 + 2, new.title WHERE new.title != '';
	END`,
	`CREATE TRIGGER sessions_search_delete AFTER DELETE ON sessions BEGIN
		DELETE FROM search_index WHERE rowid = old.rowid * 4 + 2;
	END`,

	searchBackfillTurns,
	searchBackfillChats,
	searchBackfillSessions,
	`INSERT INTO search_through (id, turn) VALUES (0, coalesce((SELECT max(rowid) FROM turns), 0))`,
}

// The back-fill of rows stored before the index existed. A body that is
// not JSON (none should be: the store checks them) is skipped rather than
// failing the migration.
var (
	searchBackfillTurns = `INSERT INTO search_index (rowid, text)
		SELECT rowid * 4, ` + turnTextSQL("body") + ` FROM turns WHERE state != 'running' AND json_valid(body)`
	searchBackfillChats = `INSERT INTO search_index (rowid, text)
		SELECT rowid * 4 + 1, title FROM chats WHERE title != ''`
	searchBackfillSessions = `INSERT INTO search_index (rowid, text)
		SELECT rowid * 4 + 2, title FROM sessions WHERE title != ''`
)

// ErrBadQuery: a search query that is not valid FTS5 query syntax.
var ErrBadQuery = errors.New("bad search query")

// SearchMaxLimit bounds the hits one Search returns.
const SearchMaxLimit = 100

// SearchQuery is what Search looks for.
type SearchQuery struct {
	// Text is an FTS5 query: words (all must occur, in any order),
	// "a phrase", prefix*, OR, NOT, NEAR(...), parentheses.
	Text string
	// Limit bounds the hits (1..SearchMaxLimit; 0 means 20).
	Limit int
	// Turns includes hits in turn text; without it only titles are
	// searched (a caller that may list sessions but not read chats).
	Turns bool
	// Visible, when set, says which sessions' hits the caller may see.
	Visible func(session string) bool
}

// Hit kinds (SearchHit.Kind).
const (
	HitTurn         = "turn"
	HitChatTitle    = "chatTitle"
	HitSessionTitle = "sessionTitle"
)

// SearchHit is one place a query matched.
type SearchHit struct {
	Kind    string // HitTurn, HitChatTitle or HitSessionTitle
	Session string
	Chat    string // "" for a session's title
	Turn    string // the turn's id; "" for a title
	// Title is the chat's title (the session's for a session title hit);
	// SessionTitle the session's.
	Title, SessionTitle string
	// Snippet is the matched text around the match; Matches are the
	// matched words in it as [start, end) offsets in UTF-16 code units
	// (what a browser's strings count).
	Snippet string
	Matches [][2]int
}

// Snippet markers: characters no title or message holds, replaced by
// offsets before a hit leaves the store.
const (
	snippetOpen  = "\x02"
	snippetClose = "\x03"
)

// searchBatch is how many ranked matches Search reads at a time; matches
// the caller may not see are skipped, and the next batch read.
const searchBatch = 64

// searchQuery reads ranked matches (best first) with their snippets.
const searchQuery = `SELECT rowid, snippet(search_index, 0, '` + snippetOpen + `', '` + snippetClose + `', '…', 24)
	FROM search_index WHERE search_index MATCH ? ORDER BY rank LIMIT ? OFFSET ?`

// Search finds stored turns, chats and sessions matching q, best first. A
// closed chat's turns and title are not found. A query that is not valid
// FTS5 syntax is an error wrapping ErrBadQuery with SQLite's reason.
func (s *Store) Search(ctx context.Context, q SearchQuery) ([]SearchHit, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 0 || limit > SearchMaxLimit:
		return nil, fmt.Errorf("%w: limit %d, want 1..%d", ErrInvalid, limit, SearchMaxLimit)
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, fmt.Errorf("%w: empty query", ErrBadQuery)
	}
	if q.Turns {
		// Turns committed and not yet indexed are indexed first, so a
		// search finds every turn committed before it (searchindex.go).
		if err := s.search.catchUp(ctx); err != nil {
			return nil, fmt.Errorf("search %q: %w", q.Text, err)
		}
	}
	// One read transaction: the matches and the rows they resolve to are
	// one snapshot, so a hit never names a turn deleted meanwhile.
	tx, err := s.db.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	defer tx.Rollback()
	hits := []SearchHit{}
	for offset := 0; len(hits) < limit; offset += searchBatch {
		type match struct {
			rowid   int64
			snippet string
		}
		var batch []match
		rows, err := tx.QueryContext(ctx, searchQuery, q.Text, searchBatch, offset)
		if err != nil {
			return nil, searchErr(q.Text, err)
		}
		for rows.Next() {
			var m match
			if err := rows.Scan(&m.rowid, &m.snippet); err != nil {
				rows.Close()
				return nil, searchErr(q.Text, err)
			}
			batch = append(batch, m)
		}
		if err := rows.Close(); err != nil {
			return nil, searchErr(q.Text, err)
		}
		if err := rows.Err(); err != nil {
			return nil, searchErr(q.Text, err)
		}
		for _, m := range batch {
			h, ok, err := resolveHit(ctx, tx, m.rowid, q.Turns)
			if err != nil {
				return nil, fmt.Errorf("search %q: %w", q.Text, err)
			}
			if !ok || (q.Visible != nil && !q.Visible(h.Session)) {
				continue
			}
			h.Snippet, h.Matches = markedSnippet(m.snippet)
			hits = append(hits, h)
			if len(hits) == limit {
				break
			}
		}
		if len(batch) < searchBatch {
			break
		}
	}
	return hits, nil
}

// searchErr names a bad query as such: every SQLite error of the MATCH
// statement but a cancelled context is the query's syntax (the table and
// the statement are the store's own).
func searchErr(query string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("search %q: %w", query, err)
	}
	msg := err.Error()
	if _, reason, ok := strings.Cut(msg, "fts5: "); ok {
		msg = reason
	} else if _, reason, ok := strings.Cut(msg, "SQL logic error: "); ok {
		msg = reason
	} else {
		return fmt.Errorf("search %q: %w", query, err)
	}
	msg = strings.TrimSuffix(msg, " (1)")
	return fmt.Errorf("%w: %s (FTS5 query syntax: words, \"a phrase\", prefix*, OR, NOT, NEAR(a b))", ErrBadQuery, msg)
}

// resolveHit reads what the index row rowid stands for; ok is false for a
// row that is not to be shown (a closed chat's, a turn when turns are not
// searched, a session title its default chat's title already shows).
func resolveHit(ctx context.Context, tx *sql.Tx, rowid int64, turns bool) (SearchHit, bool, error) {
	src := rowid >> 2
	var h SearchHit
	var hidden int // a closed chat's, or a title shown by another hit
	var err error
	switch rowid & 3 {
	case searchKindTurn:
		if !turns {
			return h, false, nil
		}
		h.Kind = HitTurn
		err = tx.QueryRowContext(ctx, `SELECT t.id, c.uri, c.title, c.closed, s.uri, s.title
			FROM turns t JOIN chats c ON c.uri = t.chat JOIN sessions s ON s.uri = c.session
			WHERE t.rowid = ?`, src).Scan(&h.Turn, &h.Chat, &h.Title, &hidden, &h.Session, &h.SessionTitle)
	case searchKindChatTitle:
		h.Kind = HitChatTitle
		err = tx.QueryRowContext(ctx, `SELECT c.uri, c.title, c.closed, s.uri, s.title
			FROM chats c JOIN sessions s ON s.uri = c.session
			WHERE c.rowid = ?`, src).Scan(&h.Chat, &h.Title, &hidden, &h.Session, &h.SessionTitle)
	case searchKindSessionTitle:
		h.Kind = HitSessionTitle
		// The session's title is its default chat's (C-COMP-26): when
		// they agree, that chat's own hit stands for both.
		err = tx.QueryRowContext(ctx, `SELECT s.uri, s.title, EXISTS (SELECT 1 FROM chats c
				WHERE c.uri = s.default_chat AND c.closed = 0 AND c.title = s.title)
			FROM sessions s WHERE s.rowid = ?`, src).Scan(&h.Session, &h.SessionTitle, &hidden)
		h.Title = h.SessionTitle
	default:
		return h, false, nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil // a turn of a chat the store does not hold
	}
	if err != nil {
		return h, false, err
	}
	return h, hidden == 0, nil
}

// markedSnippet takes the markers out of a snippet and returns where they
// were, in UTF-16 code units.
func markedSnippet(marked string) (string, [][2]int) {
	var b strings.Builder
	var matches [][2]int
	units, start := 0, -1
	for i := 0; i < len(marked); {
		r, size := utf8.DecodeRuneInString(marked[i:])
		i += size
		switch string(r) {
		case snippetOpen:
			start = units
			continue
		case snippetClose:
			if start >= 0 && units > start {
				matches = append(matches, [2]int{start, units})
			}
			start = -1
			continue
		}
		b.WriteRune(r) // an invalid byte becomes U+FFFD, one unit
		units += utf16.RuneLen(r)
	}
	return b.String(), matches
}
