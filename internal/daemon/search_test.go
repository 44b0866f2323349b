package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/host"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// search calls x-ahpd/search and returns its hits, failing on an error.
func search(t *testing.T, c *ahptest.Client, query string) []host.SearchHit {
	t.Helper()
	var res host.SearchResult
	if err := json.Unmarshal(c.MustCall(host.MethodSearch, map[string]any{"channel": ahp.RootURI, "query": query}), &res); err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// awaitTitle waits for the session title a rename set (a first message
// titles the session before).
func awaitTitle(t *testing.T, c *ahptest.Client, title string) {
	t.Helper()
	c.AwaitEnvelope("the title "+title, func(env ahptest.Envelope) bool {
		var got string
		_ = env.Field("title", &got)
		return env.Type() == "session/titleChanged" && got == title
	})
}

// TestSearchFindsAWordOfAnOldTurn: a word said in one turn is found after
// a restart (read from the store's index), with the session, chat, turn,
// titles and a snippet marking the word; a renamed session is found by its
// new title and no longer by the old one; a disposed session's turns are
// gone from the index.
func TestSearchFindsAWordOfAnOldTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("searcher")
	sess, def := e.createSession(c, "ahp-session:/5ea4c400-0000-4000-8000-000000000001")
	c.Subscribe(def)
	sendTurn(t, c, def, "t1", "the first turn says nothing special")
	sendTurn(t, c, def, "t2", "the second turn mentions a quetzal")
	sendTurn(t, c, def, "t3", "the third turn is plain again")
	gone, goneChat := e.createSession(c, "ahp-session:/5ea4c400-0000-4000-8000-000000000002")
	c.Subscribe(goneChat)
	sendTurn(t, c, goneChat, "g1", "another quetzal, soon disposed")
	c.MustCall("disposeSession", map[string]any{"channel": gone})

	e.restart()
	c = e.client("searcher-after")
	hits := search(t, c, "quetzal")
	if len(hits) != 1 {
		t.Fatalf("hits for quetzal: %+v, want one", hits)
	}
	h := hits[0]
	if h.Kind != "turn" || h.Session != sess || h.Chat != def || h.TurnID != "t2" || h.Title == "" || h.SessionTitle == "" {
		t.Fatalf("hit = %+v", h)
	}
	units := utf16.Encode([]rune(h.Snippet))
	if len(h.Matches) == 0 || string(utf16.Decode(units[h.Matches[0][0]:h.Matches[0][1]])) != "quetzal" {
		t.Fatalf("snippet %q matches %v: the word is not marked", h.Snippet, h.Matches)
	}

	// A title is found once renamed, the old one no more.
	c.Subscribe(sess)
	c.Dispatch(sess, map[string]any{"type": "session/titleChanged", "title": "Axolotl research"})
	awaitTitle(t, c, "Axolotl research")
	hits = search(t, c, "axolotl")
	if len(hits) != 1 || hits[0].Session != sess || !strings.Contains(hits[0].Title, "Axolotl") || hits[0].TurnID != "" {
		t.Fatalf("hits for the new title: %+v", hits)
	}
	// Prefix and phrase syntax reach FTS5.
	if hits := search(t, c, `"second turn" quet*`); len(hits) != 1 || hits[0].TurnID != "t2" {
		t.Fatalf("phrase and prefix: %+v", hits)
	}
}

// TestSearchRefusals: without session:list the method is refused naming
// the grant; with session:list but not chat:turns only titles are
// searched; a query FTS5 cannot parse, a missing query and a limit past
// the bound are -32602 naming the param, and the connection stays up.
func TestSearchRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{
			{Token: "turns-token", Principal: "user:turns", Grants: []string{"chat:turns"}},
			{Token: "lister-token", Principal: "user:lister", Grants: []string{"session:list"}},
		}
	})
	owner := e.client("owner")
	sess, def := e.createSession(owner, "ahp-session:/5ea4c400-0000-4000-8000-000000000003")
	owner.Subscribe(def)
	sendTurn(t, owner, def, "t1", "a pangolin in the text")
	owner.Subscribe(sess)
	owner.Dispatch(sess, map[string]any{"type": "session/titleChanged", "title": "Pangolin notes"})
	awaitTitle(t, owner, "Pangolin notes")
	if hits := search(t, owner, "pangolin"); len(hits) != 3 {
		t.Fatalf("root's hits: %+v, want the turn, the chat's title and the session's", hits)
	}

	noList := ahptest.Dial(t, e.d.URL(), "turns-token")
	noList.Initialize("turns", ahp.RootURI)
	_, err := noList.Call(host.MethodSearch, map[string]any{"channel": ahp.RootURI, "query": "pangolin"})
	if err == nil || err.Code != ahp.CodePermissionDenied || !strings.Contains(err.Message, "session:list") {
		t.Fatalf("search without session:list: %v", err)
	}

	lister := ahptest.Dial(t, e.d.URL(), "lister-token")
	lister.Initialize("lister", ahp.RootURI)
	hits := search(t, lister, "pangolin")
	if len(hits) != 2 || hits[0].Kind == "turn" || hits[1].Kind == "turn" {
		t.Fatalf("a lister without chat:turns sees %+v, want the two titles alone", hits)
	}

	for _, bad := range []struct {
		params map[string]any
		says   string
	}{
		{map[string]any{"channel": ahp.RootURI, "query": `"unterminated`}, "params.query"},
		{map[string]any{"channel": ahp.RootURI, "query": "a AND"}, "syntax error"},
		{map[string]any{"channel": ahp.RootURI}, "params.query: required"},
		{map[string]any{"channel": ahp.RootURI, "query": "x", "limit": 101}, "params.limit"},
		{map[string]any{"channel": ahp.RootURI, "query": "x", "limit": 0}, "params.limit"},
		{map[string]any{"channel": sess, "query": "x"}, "params.channel"},
		{map[string]any{"channel": ahp.RootURI, "query": strings.Repeat("x", 2000)}, "params.query"},
	} {
		_, err := owner.Call(host.MethodSearch, bad.params)
		if err == nil || err.Code != ahp.CodeInvalidParams || !strings.Contains(err.Message, bad.says) {
			t.Errorf("search %v: %v, want -32602 saying %q", bad.params, err, bad.says)
		}
	}
	if hits := search(t, owner, "pangolin"); len(hits) != 3 {
		t.Fatalf("after the refusals: %+v", hits)
	}
}
