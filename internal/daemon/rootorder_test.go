package daemon_test

import (
	"encoding/json"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestNewSessionIsAnnouncedBeforeItsChanges (issue 31): a root watcher
// hears of a new session in root/sessionAdded before any
// root/sessionSummaryChanged of it (its first chat and default chat are
// part of what it is added with), so a client that ignores changes to
// sessions it does not know loses nothing.
func TestNewSessionIsAnnouncedBeforeItsChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	watcher := e.client("watcher")
	a := e.client("a")
	const sess = "ahp-session:/0a0d0000-0000-4000-8000-000000000001"
	a.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	added := watcher.AwaitNotificationWhere("root/sessionAdded", func(raw json.RawMessage) bool {
		var p ahp.SessionAddedParams
		return json.Unmarshal(raw, &p) == nil && p.Summary.Resource == sess
	})
	var p ahp.SessionAddedParams
	if err := json.Unmarshal(added.Params, &p); err != nil || p.Summary.DefaultChat == "" || len(p.Summary.Chats) != 1 {
		t.Fatalf("root/sessionAdded %s: want its default chat and its one chat in it", added.Params)
	}
	// A turn renames it: a change the watcher hears after the addition.
	a.Subscribe(p.Summary.DefaultChat)
	sendTurn(t, a, p.Summary.DefaultChat, "t1", "name me")
	watcher.AwaitNotificationWhere("root/sessionSummaryChanged", func(raw json.RawMessage) bool {
		var c ahp.SessionSummaryChangedParams
		return json.Unmarshal(raw, &c) == nil && c.Session == sess
	})
	for _, f := range watcher.Frames() {
		var about struct {
			Session string `json:"session"`
			Summary struct {
				Resource string `json:"resource"`
			} `json:"summary"`
		}
		_ = json.Unmarshal(f.Params, &about)
		if f.Method == "root/sessionSummaryChanged" && about.Session == sess {
			t.Fatalf("root/sessionSummaryChanged of %s came before its root/sessionAdded: %s", sess, f.Params)
		}
		if f.Method == "root/sessionAdded" && about.Summary.Resource == sess {
			return
		}
	}
	t.Fatal("no root/sessionAdded among the frames")
}
