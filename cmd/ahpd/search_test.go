package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/host"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// `ahpd search` finds the one turn of 55 that said a word, as a table and
// as JSON, and refuses a query FTS5 cannot parse; `ahpd export` writes
// the session's two chats whole, the default chat's 55 turns paged with
// fetchTurns past the first view of 50, as JSON and as Markdown.
func TestSearchAndExportVerbs(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	p := serveBinary(t, data, work)
	env := []string{"AHPD_URL=" + p.url}

	c := ahptest.Dial(t, p.url, "")
	c.Initialize("test", ahp.RootURI)
	const sess = "ahp-session:/5ea4c400-0000-4000-8000-0000000000e1"
	c.MustCall("createSession", map[string]any{"channel": sess, "provider": "script"})
	def := upgradeDefaultChat(t, c, sess)
	c.Subscribe(def)
	const turns = 55
	for i := range turns {
		text := fmt.Sprintf("turn number %d", i)
		if i == 7 {
			text = "turn number 7 mentions a capybara"
		}
		upgradeTurn(t, c, def, fmt.Sprintf("u%02d", i), text)
	}
	side := "ahp-chat:/5ea4c400-0000-4000-8000-0000000000e2"
	c.MustCall("createChat", map[string]any{"channel": sess, "chat": side})
	c.Subscribe(side)
	upgradeTurn(t, c, side, "s0", "the side chat's only question")

	out, errOut, code := ahpdRun(t, env, "search", "capybara", "--json")
	var hits []host.SearchHit
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) != 1 ||
		hits[0].Session != sess || hits[0].Chat != def || hits[0].TurnID != "u07" {
		t.Fatalf("search --json: exit %d %q %s", code, out, errOut)
	}
	if out, _, code = ahpdRun(t, env, "search", "capybara"); code != 0 || !strings.Contains(out, "u07") || !strings.Contains(out, "*capybara*") {
		t.Fatalf("search: exit %d %q", code, out)
	}
	if out, _, code = ahpdRun(t, env, "search", "nothingmatchesthis"); code != 0 || strings.TrimSpace(out) != "no hits" {
		t.Fatalf("search without hits: exit %d %q", code, out)
	}
	if _, errOut, code = ahpdRun(t, env, "search", `"unterminated`); code == 0 || !strings.Contains(errOut, "params.query") {
		t.Fatalf("a bad query: exit %d %q", code, errOut)
	}

	file := filepath.Join(t.TempDir(), "export.json")
	if _, errOut, code = ahpdRun(t, env, "export", sess, "--format", "json", "-o", file); code != 0 {
		t.Fatalf("export --format json: exit %d %s", code, errOut)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Session string
		Chats   []struct {
			Chat  string
			Turns []ahp.Turn
		}
	}
	if err := json.Unmarshal(raw, &ex); err != nil || ex.Session != sess || len(ex.Chats) != 2 {
		t.Fatalf("exported %v: %.400s", err, raw)
	}
	got := ex.Chats[0]
	if got.Chat != def || len(got.Turns) != turns {
		t.Fatalf("exported %s with %d turns, want %s with %d", got.Chat, len(got.Turns), def, turns)
	}
	for i, tr := range got.Turns {
		if want := fmt.Sprintf("u%02d", i); tr.ID != want || tr.State != ahp.TurnComplete || len(tr.ResponseParts) == 0 {
			t.Fatalf("exported turn %d: %s %s with %d parts, want %s complete with its answer", i, tr.ID, tr.State, len(tr.ResponseParts), want)
		}
	}
	if ex.Chats[1].Chat != side || len(ex.Chats[1].Turns) != 1 {
		t.Fatalf("exported side chat: %+v", ex.Chats[1])
	}

	out, errOut, code = ahpdRun(t, env, "export", sess, "--chat", side)
	if code != 0 || !strings.Contains(out, "### User") || !strings.Contains(out, "the side chat's only question") ||
		!strings.Contains(out, "### Assistant") || strings.Contains(out, "capybara") {
		t.Fatalf("export --chat as markdown: exit %d %q %s", code, out, errOut)
	}
	if _, errOut, code = ahpdRun(t, env, "export", sess, "--chat", "ahp-chat:/not-here"); code == 0 || !strings.Contains(errOut, "is not a chat of") {
		t.Fatalf("export of a chat the session lacks: exit %d %s", code, errOut)
	}
}
