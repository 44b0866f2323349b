package daemon_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestRootCatalogue: root watchers hear of sessions added, changed and
// removed; listSessions pages the catalogue newest first with ISO dates;
// a disposed session is gone.
func TestRootCatalogue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	watcher := e.client("w")
	var uris []string
	for i := range 5 {
		uri := fmt.Sprintf("ahp-session:/ca7a1090-0000-4000-8000-%012d", i)
		a.MustCall("createSession", map[string]any{"channel": uri, "provider": "script"})
		uris = append(uris, uri)
	}
	added := watcher.AwaitNotification("root/sessionAdded")
	var ap ahp.SessionAddedParams
	if err := json.Unmarshal(added.Params, &ap); err != nil || ap.Summary.Resource != uris[0] || ap.Summary.Provider != "script" || ap.Summary.DefaultChat == "" {
		t.Fatalf("root/sessionAdded = %s", added.Params)
	}
	// A turn renames the session after its first message and tells root
	// watchers (root/sessionSummaryChanged).
	st := sessionState(t, a, uris[2])
	a.Subscribe(st.DefaultChat)
	sendTurn(t, a, st.DefaultChat, "t1", "Rename me please")
	watcher.AwaitNotificationWhere("root/sessionSummaryChanged", func(raw json.RawMessage) bool {
		var p ahp.SessionSummaryChangedParams
		return json.Unmarshal(raw, &p) == nil && p.Session == uris[2] && p.Changes.Title != nil && *p.Changes.Title == "Rename me please"
	})

	// listSessions: newest first, paged with an opaque cursor, ISO dates.
	var all []ahp.SessionSummary
	cursor := ""
	for pages := 0; ; pages++ {
		params := map[string]any{"channel": ahp.RootURI, "limit": 2}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res ahp.ListSessionsResult
		if err := json.Unmarshal(a.MustCall("listSessions", params), &res); err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Items...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
		if pages > 5 {
			t.Fatal("paging never ends")
		}
	}
	if len(all) != 5 {
		t.Fatalf("listed %d sessions, want 5", len(all))
	}
	if all[0].Resource != uris[2] {
		t.Fatalf("the session with the newest turn is not first: %s", all[0].Resource)
	}
	for i, s := range all {
		if s.CreatedAt == "" || s.ModifiedAt == "" || s.CreatedAt[len(s.CreatedAt)-1] != 'Z' {
			t.Fatalf("session %d dates: %q %q", i, s.CreatedAt, s.ModifiedAt)
		}
		if i > 0 && all[i-1].ModifiedAt < s.ModifiedAt {
			t.Fatalf("not newest first at %d", i)
		}
	}
	if all[0].Title != "Rename me please" {
		t.Fatalf("title = %q", all[0].Title)
	}

	a.MustCall("disposeSession", map[string]any{"channel": uris[1]})
	rem := watcher.AwaitNotification("root/sessionRemoved")
	var rp ahp.SessionRemovedParams
	if err := json.Unmarshal(rem.Params, &rp); err != nil || rp.Session != uris[1] {
		t.Fatalf("root/sessionRemoved = %s", rem.Params)
	}
	if _, err := a.Call("subscribe", map[string]any{"channel": uris[1]}); err == nil || err.Code != ahp.CodeSessionNotFound {
		t.Fatalf("subscribe to a disposed session: %v", err)
	}
	if _, err := a.Call("disposeSession", map[string]any{"channel": uris[1]}); err == nil || err.Code != ahp.CodeSessionNotFound {
		t.Fatalf("dispose twice: %v", err)
	}
	e.restart()
	b := e.client("b")
	var res ahp.ListSessionsResult
	_ = json.Unmarshal(b.MustCall("listSessions", map[string]any{"channel": ahp.RootURI}), &res)
	if len(res.Items) != 4 {
		t.Fatalf("after restart %d sessions, want 4", len(res.Items))
	}
}
