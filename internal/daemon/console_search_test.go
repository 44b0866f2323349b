package daemon_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestConsoleSearchAndExport: the console's search box finds a word said
// in an old turn (older than the page a chat opens with), lists the hit
// with the word marked, and opens the session at that turn, paging it in;
// the session header's Export gives the session's whole transcript as JSON
// (every turn, as the protocol states it) and as Markdown, read as ahpd
// export reads it: a view of the newest turns, then fetchTurns pages.
func TestConsoleSearchAndExport(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	g.Subscribe(chat)
	const total, old = 45, 3
	for i := range total {
		text := "turn " + strconv.Itoa(i)
		if i == old {
			text = "an old turn about a marmoset"
		}
		sendTurn(t, g, chat, "t"+strconv.Itoa(i), text)
	}

	b := newBrowser(t)
	p := b.page("P")
	p.do("open the console", chromedp.Navigate(consoleURL(e)))
	p.online()
	p.typeText("#search-input", "marmoset")
	p.click("#search-go")
	p.wait("one hit", `document.querySelectorAll('#search-results .hit').length === 1`)
	if got := p.str(`document.querySelector('#search-results .hit mark').textContent`); got != "marmoset" {
		t.Fatalf("the marked word is %q", got)
	}
	p.screenshot("search-results")
	p.click("#search-results .hit")
	hit := `document.querySelector('#turns .turn[data-turn-id="t` + strconv.Itoa(old) + `"]')`
	p.wait("the session open at the old turn", `ahpdConsole.session === `+jsq(sess)+` && ahpdConsole.chat === `+jsq(chat)+
		` && !!`+hit+` && `+hit+`.classList.contains('search-hit') && document.activeElement === `+hit)
	p.screenshot("search-hit")

	// A query FTS5 cannot parse is said, and the page goes on.
	p.do("clear the box", chromedp.Evaluate[chromedp.Void](`document.getElementById('search-input').value = ''`))
	p.typeText("#search-input", `"unterminated`)
	p.click("#search-go")
	p.wait("the refusal", `document.getElementById('search-error').textContent.includes('params.query')`)

	p.do("pick JSON", chromedp.Evaluate[chromedp.Void](`document.getElementById('export-format').value = 'json'`))
	p.click("#export")
	p.wait("the JSON export", `!!ahpdConsole.lastExport && ahpdConsole.lastExport.name.endsWith('.json')`)
	var ex struct {
		Session string
		Chats   []struct {
			Chat  string
			Turns []ahp.Turn
		}
	}
	if err := json.Unmarshal([]byte(p.str(`ahpdConsole.lastExport.text`)), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Session != sess || len(ex.Chats) != 1 || ex.Chats[0].Chat != chat || len(ex.Chats[0].Turns) != total {
		t.Fatalf("exported %s with %d chats", ex.Session, len(ex.Chats))
	}
	if pages := p.str(`String(ahpdConsole.lastExport.pages)`); pages == "0" {
		t.Errorf("the export of %d turns fetched no page past its view", total)
	}
	for i, tr := range ex.Chats[0].Turns {
		if tr.ID != "t"+strconv.Itoa(i) || tr.State != ahp.TurnComplete {
			t.Fatalf("exported turn %d is %s %s", i, tr.ID, tr.State)
		}
	}

	p.do("pick Markdown", chromedp.Evaluate[chromedp.Void](`document.getElementById('export-format').value = 'markdown'`))
	p.click("#export")
	p.wait("the Markdown export", `ahpdConsole.lastExport.name.endsWith('.md')`)
	md := p.str(`ahpdConsole.lastExport.text`)
	if !strings.Contains(md, "an old turn about a marmoset") || strings.Count(md, "### User") != total || !strings.Contains(md, "### Assistant") {
		t.Fatalf("the Markdown export:\n%.600s", md)
	}
	// The open chat is still followed after the export read it whole.
	p.send("after the export")
	p.awaitTurn("after the export", "complete")
	p.noErrors()
}
