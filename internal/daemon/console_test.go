package daemon_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
)

// newConsoleEnv is a daemon on 127.0.0.1:0 with the script agent, its
// [slow] answers slow enough (20 deltas 150 ms apart) for a browser to be
// seen mid-stream.
func newConsoleEnv(t *testing.T, mutate ...func(*daemon.Config)) *testEnv {
	t.Helper()
	return newScriptEnv(t, script.Options{SlowDelay: 150 * time.Millisecond}, false, mutate...)
}

func consoleURL(e *testEnv) string { return "http" + strings.TrimPrefix(e.d.URL(), "ws") + "/" }

// turnJS is a JavaScript expression for the rendered turn whose message is text.
func turnJS(text string) string {
	return `([...document.querySelectorAll('.turn')].find((n) => n.querySelector('.user-msg .text')?.textContent === ` + jsq(text) + `))`
}

func answerJS(text string) string {
	return `(` + turnJS(text) + `?.querySelector('.response')?.textContent ?? '')`
}

func (p *page) send(text string) {
	p.t.Helper()
	p.wait("the composer is ready", `!document.getElementById('send').disabled`)
	p.typeText("#message", text)
	p.click("#send")
}

func (p *page) awaitTurn(text, state string) {
	p.t.Helper()
	p.wait("turn "+text+" "+state, turnJS(text)+`?.dataset.state === `+jsq(state))
}

func (p *page) online() {
	p.t.Helper()
	p.wait("online", `document.getElementById('conn').dataset.status === 'online'`)
}

// TestConsole drives the web console served by the daemon in two (and a
// third) headless Chromium tabs against the script agent: the live
// sessions list; a session created in the page; two pages on one chat see
// the same stream; send, queue, reorder, take back, steer, stop; confirm and
// deny a tool call; resume a failed turn; the shared draft; completions and
// an attached file; ! commands; markdown that cannot become markup; fork,
// side chat, rename, close; reconnect after the socket is cut mid-stream
// with no lost or doubled output; a narrow screen. Screenshots of each main
// view go to $ARTIFACTS_DIR/console (or a temp dir named in the log).
func TestConsole(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	b := newBrowser(t)
	base := consoleURL(e)

	a := b.page("A")
	a.do("open the console", chromedp.Navigate(base))
	a.online()

	// The sessions list is live: a session another client creates shows up.
	goSess, goChat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	a.wait("the Go client's session in the list", `!!document.querySelector('#sessions-list li[data-session=`+jsq(goSess)+`]')`)
	g.Subscribe(goChat)
	sendTurn(t, g, goChat, "g1", "named from go")
	a.wait("its title and status from root notifications", `document.querySelector('#sessions-list li[data-session=`+jsq(goSess)+`] .title')?.textContent !== '(untitled)' && document.querySelector('#sessions-list li[data-session=`+jsq(goSess)+`] .status').textContent === 'idle'`)
	a.typeText("#filter", "no-such-session")
	a.wait("the filter hides it", `document.querySelectorAll('#sessions-list li').length === 0`)
	a.do("clear the filter", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))
	a.wait("the filter cleared", `document.querySelectorAll('#sessions-list li').length === 1`)
	// A keyboard person's place in the list survives its live re-render.
	before := a.str(`ahpdConsole.sessions.get(` + jsq(goSess) + `).modifiedAt`)
	a.do("focus the session", chromedp.Evaluate[chromedp.Void](`document.querySelector('#sessions-list li[data-session=`+jsq(goSess)+`] button').focus()`))
	sendTurn(t, g, goChat, "g2", "again from go")
	a.wait("the list re-rendered", `ahpdConsole.sessions.get(`+jsq(goSess)+`).modifiedAt !== `+jsq(before))
	if got := a.str(`document.activeElement.dataset.focusKey || document.activeElement.tagName`); got != "session:"+goSess {
		t.Errorf("the focus moved to %q after a live update, want the session's button", got)
	}

	// A session made in the page, on the script agent.
	a.wait("the script agent offered", `document.getElementById('provider').value === 'script'`)
	a.click("#new-session")
	a.wait("the new session open on its default chat", `ahpdConsole.session && ahpdConsole.session !== `+jsq(goSess)+` && ahpdConsole.chatState && document.querySelectorAll('#tabs [role=tab]').length === 1`)
	sess := a.str(`ahpdConsole.session`)
	chat := a.str(`ahpdConsole.chat`)
	a.wait("the new session listed", `document.querySelectorAll('#sessions-list li').length === 2`)
	a.screenshot("sessions")
	a.accessible("the sessions view")

	// A second page opens the same chat from the list.
	bp := b.page("B")
	bp.do("open the console", chromedp.Navigate(base))
	bp.online()
	bp.wait("the session listed", `!!document.querySelector('#sessions-list li[data-session=`+jsq(sess)+`] button')`)
	bp.click(`#sessions-list li[data-session="` + sess + `"] button`)
	bp.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)

	t.Run("two pages see one stream", func(t *testing.T) {
		defer bind(t, a, bp)()
		msg := "[slow] streaming to both pages"
		a.send(msg)
		bp.wait("B sees the turn mid-stream", turnJS(msg)+`?.dataset.state === 'running' && `+answerJS(msg)+`.length > 12`)
		bp.screenshot("chat-mid-stream")
		a.awaitTurn(msg, "complete")
		bp.awaitTurn(msg, "complete")
		want := "echo: " + msg
		for _, p := range []*page{a, bp} {
			if got := p.str(`(` + turnJS(msg) + `.querySelector('.part-md').textContent)`); got != want {
				t.Errorf("%s shows %q, want %q", p.name, got, want)
			}
		}
	})

	t.Run("send, queue, reorder, take back, stop", func(t *testing.T) {
		defer bind(t, a, bp)()
		a.send("[hold] hold on")
		bp.awaitTurn("[hold] hold on", "running")
		a.wait("the send button queues while a turn runs", `document.getElementById('send').textContent === 'Queue'`)
		a.send("queued one")
		a.send("queued two")
		bp.wait("B sees both queued in order", `[...document.querySelectorAll('#pending li.queued .text')].map((n) => n.textContent).join('|') === 'queued one|queued two'`)
		bp.click(`#pending li.queued button.down`)
		a.wait("A sees the new order", `[...document.querySelectorAll('#pending li.queued .text')].map((n) => n.textContent).join('|') === 'queued two|queued one'`)
		a.click(`#pending li.queued button.take-back`)
		bp.wait("B sees it taken back", `[...document.querySelectorAll('#pending li.queued .text')].map((n) => n.textContent).join('|') === 'queued one'`)
		bp.click("#stop")
		a.awaitTurn("[hold] hold on", "cancelled")
		// C-TURN-37: after a stop the queue waits for a turn the person starts.
		a.wait("the queue still waiting", `document.getElementById('send').textContent === 'Send' && document.querySelector('#pending li.queued .text')?.textContent === 'queued one'`)
		bp.send("after the stop")
		a.awaitTurn("after the stop", "complete")
		a.awaitTurn("queued one", "complete")
		bp.awaitTurn("queued one", "complete")
		if n := evalAs[int](a, `document.querySelectorAll('.turn').length`); n != 4 {
			t.Errorf("A shows %d turns, want 4 (the taken-back message never ran)", n)
		}
	})

	t.Run("steer", func(t *testing.T) {
		defer bind(t, a, bp)()
		msg := "[slow] steer target"
		a.send(msg)
		a.awaitTurn(msg, "running")
		a.wait("steer enabled", `!document.getElementById('steer').disabled`)
		a.typeText("#message", "go left")
		a.click("#steer")
		a.awaitTurn(msg, "complete")
		bp.wait("B sees the steering read by the turn", answerJS(msg)+`.includes('[steered: go left]')`)
	})

	t.Run("confirm and deny a tool call", func(t *testing.T) {
		defer bind(t, a, bp)()
		msg := "[confirm] run the tool"
		a.send(msg)
		bp.wait("B sees the confirmation", `!!`+turnJS(msg)+`?.querySelector('.tool[data-status=pending-confirmation] button.approve')`)
		bp.screenshot("tool-confirmation")
		bp.accessible("a tool confirmation")
		bp.click(`.tool[data-status=pending-confirmation] button.approve`)
		a.awaitTurn(msg, "complete")
		a.wait("the tool completed with its result", `!!`+turnJS(msg)+`.querySelector('.tool[data-status=completed]') && `+answerJS(msg)+`.includes('Echoed')`)

		deny := "[confirm] deny this"
		a.send(deny)
		a.wait("the confirmation", `!!`+turnJS(deny)+`?.querySelector('button.deny')`)
		a.click(`.tool[data-status=pending-confirmation] button.deny`)
		a.awaitTurn(deny, "complete")
		bp.wait("B sees it denied", `!!`+turnJS(deny)+`?.querySelector('.tool[data-status=cancelled]')`)
	})

	t.Run("resume a failed turn", func(t *testing.T) {
		defer bind(t, a, bp)()
		msg := "[error:resumable] flaky"
		a.send(msg)
		bp.awaitTurn(msg, "error")
		bp.click(`.turn[data-state=error] button.resume`)
		a.awaitTurn(msg, "complete")
	})

	t.Run("shared draft", func(t *testing.T) {
		defer bind(t, a, bp)()
		a.typeText("#message", "a draft from A")
		bp.wait("B sees A's draft", `document.getElementById('message').value === 'a draft from A'`)
		a.do("clear the draft", chromedp.Evaluate[chromedp.Void](`(() => { const m = document.getElementById('message'); m.value = ''; m.dispatchEvent(new Event('input')); })()`))
		bp.wait("B sees it cleared", `document.getElementById('message').value === ''`)
	})

	t.Run("completions and an attached file", func(t *testing.T) {
		defer bind(t, a, bp)()
		if err := os.WriteFile(filepath.Join(e.workDir, "notes-console.txt"), []byte("notes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		upload := filepath.Join(t.TempDir(), "upload.txt")
		if err := os.WriteFile(upload, []byte("uploaded bytes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a.typeText("#message", "read @notes-con")
		a.wait("the @ completion", `!document.getElementById('completions').hidden && document.getElementById('completions').textContent.includes('notes-console.txt')`)
		a.typeText("#message", kb.Enter)
		a.wait("the completion inserted", `document.getElementById('message').value.includes('notes-console.txt') && document.querySelectorAll('#attachments li').length === 1`)
		a.do("attach a file", chromedp.SetUploadFiles(chromedp.CSS("#attach"), []string{upload}))
		a.wait("the file listed", `document.getElementById('attachments').textContent.includes('upload.txt')`)
		a.click("#send")
		a.wait("the turn shows its attachments", `[...document.querySelectorAll('.turn .attachments')].some((n) => n.textContent.includes('upload.txt'))`)
		raw, _ := g.Subscribe(chat)
		st := chatState(t, raw)
		var labels []string
		for _, tr := range append(st.Turns, turnsOf(st.ActiveTurn)...) {
			for _, at := range tr.Message.Attachments {
				labels = append(labels, at.Type+":"+at.Label)
			}
		}
		if got := strings.Join(labels, " "); !strings.Contains(got, ":notes-console.txt") || !strings.Contains(got, ":upload.txt") {
			t.Errorf("stored attachments %q, want the completion's file and upload.txt", got)
		}
	})

	t.Run("a ! command", func(t *testing.T) {
		defer bind(t, a, bp)()
		a.send("!echo console-bang")
		a.wait("its output", answerJS("!echo console-bang")+`.includes('console-bang') && `+turnJS("!echo console-bang")+`.dataset.state !== 'running'`)
	})

	t.Run("markdown cannot become markup", func(t *testing.T) {
		defer bind(t, a, bp)()
		msg := "**bold** <img src=x onerror=window.pwned=1> [bad](javascript:window.pwned=1) [ok](https://example.com/x) <b>raw</b> `code`"
		a.send(msg)
		a.awaitTurn(msg, "complete")
		md := turnJS(msg) + `.querySelector('.part-md')`
		if got := a.str(`[` + md + `.querySelectorAll('strong').length, ` + md + `.querySelectorAll('img').length, [...` + md + `.querySelectorAll('a')].map((x) => x.getAttribute('href')).join(' '), String(window.pwned), ` + md + `.querySelectorAll('b').length, ` + md + `.querySelectorAll('code').length].join(',')`); got != "1,0,https://example.com/x,undefined,0,1" {
			t.Errorf("rendered strong,img,links,pwned,b,code = %q, want 1,0,https://example.com/x,undefined,0,1", got)
		}
		// Raw HTML shows as the text it is.
		if got := a.str(md + `.textContent`); !strings.Contains(got, "<b>raw</b>") || !strings.Contains(got, "<img src=x") {
			t.Errorf("raw HTML did not show as text: %q", got)
		}
		// A live part that did not change keeps its node (drawn every frame
		// while its turn streams); a changed one, or one without a key, is
		// drawn anew.
		a.do("load the renderer", chromedp.Evaluate[chromedp.Void](`import('/console/markdown.js').then((m) => { window.__md = m; })`))
		a.wait("the renderer loaded", `!!window.__md`)
		if got := a.str(`(() => { const m = window.__md; const x = m.renderMarkdown('**a**', 'k'); return [x === m.renderMarkdown('**a**', 'k'), x !== m.renderMarkdown('**a** more', 'k'), m.renderMarkdown('**a**') !== m.renderMarkdown('**a**')].join(','); })()`); got != "true,true,true" {
			t.Errorf("kept, redrawn on change, drawn anew without a key = %q, want true,true,true", got)
		}
	})

	t.Run("fork, side chat, rename, close", func(t *testing.T) {
		defer bind(t, a, bp)()
		first := "[slow] streaming to both pages"
		a.do("fork at the first turn", chromedp.Evaluate[chromedp.Void](turnJS(first)+`.querySelector('button.fork').focus()`))
		a.do("press Enter on the focused button", chromedp.KeyEvent(kb.Enter))
		a.wait("the fork open", `ahpdConsole.chat !== `+jsq(chat)+` && !!ahpdConsole.chatState && document.querySelectorAll('.turn').length === 1`)
		fork := a.str(`ahpdConsole.chat`)
		bp.wait("B sees the fork's tab", `!!document.querySelector('#tabs [data-chat=`+jsq(fork)+`]')`)
		if got := a.str(`document.querySelector('.turn .user-msg .text').textContent`); got != first {
			t.Errorf("the fork holds %q, want the first turn", got)
		}
		a.send("in the fork")
		a.awaitTurn("in the fork", "complete")

		a.click(`#tabs [data-chat="` + chat + `"]`)
		a.wait("back on the main chat", `ahpdConsole.chat === `+jsq(chat)+` && !!`+turnJS(first))
		a.click(`.turn button.side-chat`)
		a.wait("the side chat open", `ahpdConsole.chat !== `+jsq(chat)+` && ahpdConsole.chat !== `+jsq(fork)+` && !!ahpdConsole.chatState`)
		side := a.str(`ahpdConsole.chat`)
		// The tabs answer the arrow keys.
		a.do("focus the side chat's tab, press ArrowLeft", chromedp.Evaluate[chromedp.Void](`document.querySelector('#tabs [aria-selected=true]').focus()`), chromedp.KeyEvent(kb.ArrowLeft))
		a.wait("the tab before it selected and focused", `ahpdConsole.chat !== `+jsq(side)+` && document.activeElement === document.querySelector('#tabs [aria-selected=true]')`)
		a.click(`#tabs [data-chat="` + side + `"]`)
		a.wait("back on the side chat", `ahpdConsole.chat === `+jsq(side)+` && !!ahpdConsole.chatState`)
		bp.wait("B sees three tabs", `document.querySelectorAll('#tabs [role=tab]').length === 3 && document.querySelector('#tabs [data-chat=`+jsq(side)+`]').dataset.origin === 'sideChat'`)

		a.click("#rename")
		a.wait("the title selected for typing over", `document.activeElement.id === 'rename-input' && document.getElementById('rename-input').selectionEnd === document.getElementById('rename-input').value.length`)
		a.do("clear it", chromedp.Evaluate[chromedp.Void](`document.getElementById('rename-input').value = ''`))
		a.typeText("#rename-input", "Renamed side")
		a.click("#rename-save")
		bp.wait("B sees the new title", `document.querySelector('#tabs [data-chat=`+jsq(side)+`]')?.textContent === 'Renamed side'`)

		a.click("#close-chat")
		a.click("#close-chat")
		bp.wait("B sees the chat closed", `!document.querySelector('#tabs [data-chat=`+jsq(side)+`]') && document.querySelectorAll('#tabs [role=tab]').length === 2`)
		a.wait("A moved to another chat", `ahpdConsole.chat !== `+jsq(side))
	})

	proxy := newCutProxy(t, strings.TrimPrefix(e.d.URL(), "ws://"))
	c := b.page("C")
	t.Run("reconnect after the socket is cut", func(t *testing.T) {
		defer bind(t, a, bp, c)()
		c.do("open through the proxy", chromedp.Navigate(proxy.url()+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()))
		c.online()
		c.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
		msg := "[slow] across a cut in the network"
		c.send(msg)
		c.wait("some of the answer", turnJS(msg)+`?.dataset.state === 'running' && `+answerJS(msg)+`.length > 8`)
		if n := proxy.cut(); n == 0 {
			t.Fatal("the proxy held no connection to cut")
		}
		c.wait("a reconnect", `Number(document.getElementById('conn').dataset.reconnects || 0) >= 1 && document.getElementById('conn').dataset.status === 'online'`)
		c.awaitTurn(msg, "complete")
		want := "echo: " + msg
		if got := c.str(`(` + turnJS(msg) + `.querySelector('.part-md').textContent)`); got != want {
			t.Errorf("after the cut C shows %q, want %q (nothing lost, nothing doubled)", got, want)
		}
		if n := evalAs[int](c, `[...document.querySelectorAll('.turn')].filter((n) => n.querySelector('.user-msg .text').textContent === `+jsq(msg)+`).length`); n != 1 {
			t.Errorf("C shows the turn %d times", n)
		}
		c.noErrors()
	})

	t.Run("narrow screen", func(t *testing.T) {
		defer bind(t, a, bp)()
		a.do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		a.wait("the chat fills the screen", `getComputedStyle(document.getElementById('sessions')).display === 'none' && getComputedStyle(document.getElementById('back')).display !== 'none'`)
		a.screenshot("narrow-chat")
		a.accessible("the narrow chat view")
		a.click("#back")
		a.wait("the sessions list", `getComputedStyle(document.getElementById('sessions')).display !== 'none' && getComputedStyle(document.getElementById('session')).display === 'none'`)
		a.screenshot("narrow-sessions")
	})

	t.Run("the daemon restarts", func(t *testing.T) {
		defer bind(t, c)()
		handshakes := c.str(`document.getElementById('conn').dataset.handshakes`)
		e.restart()
		proxy.retarget(strings.TrimPrefix(e.d.URL(), "ws://"))
		proxy.cut()
		c.wait("a new handshake with the new daemon", `document.getElementById('conn').dataset.handshakes !== `+jsq(handshakes)+` && document.getElementById('conn').dataset.status === 'online'`)
		c.wait("the chat back with its turns", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState && `+turnJS("[slow] across a cut in the network")+`?.dataset.state === 'complete'`)
		c.send("after the restart")
		c.awaitTurn("after the restart", "complete")
	})

	a.noErrors()
	bp.noErrors()
	c.noErrors()
}

func turnsOf(at *ahp.ActiveTurn) []ahp.Turn {
	if at == nil {
		return nil
	}
	return []ahp.Turn{{ID: at.ID, Message: at.Message}}
}

// TestConsoleToken: with a token configured the page asks for it, refuses
// a wrong one, and connects with the right one, which it keeps in
// sessionStorage and never puts in the page's URL; the websocket carries it
// as a subprotocol.
func TestConsoleToken(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t, func(c *daemon.Config) { c.ConnectionToken = "console-secret-token" })
	b := newBrowser(t)
	p := b.page("T")
	p.do("open the console", chromedp.Navigate(consoleURL(e)))
	p.wait("the token page", `!document.getElementById('token-page').hidden && document.getElementById('app').hidden`)
	p.screenshot("token")
	p.accessible("the token page")
	p.typeText("#token-input", "wrong")
	p.click("#token-submit")
	p.wait("the refusal", `document.getElementById('token-error').textContent.includes('not accepted')`)
	p.typeText("#token-input", "console-secret-token")
	p.click("#token-submit")
	p.online()
	p.wait("the sessions view", `!document.getElementById('app').hidden`)
	if got := p.str(`location.href + ' ' + document.referrer`); strings.Contains(got, "secret") {
		t.Errorf("the token is in the page's URL: %q", got)
	}
	if got := p.str(`sessionStorage.getItem('ahpd.token')`); got != "console-secret-token" {
		t.Errorf("sessionStorage holds %q", got)
	}
	// A reload reconnects with the kept token, without the token page.
	p.do("reload", chromedp.Reload())
	p.online()
	p.noErrors()
}

// TestConsoleForeignOrigin: the daemon's own page connects without a token
// (TestConsole), but a page of another origin that opens a websocket to the
// daemon is refused at the door, in a real browser.
func TestConsoleForeignOrigin(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	b := newBrowser(t)
	wsURL, _ := json.Marshal(e.d.URL() + "/")
	srv := newForeignPage(t, `<!doctype html><title>foreign</title><script>
const ws = new WebSocket(`+string(wsURL)+`, ['ahpd']);
ws.onopen = () => { document.title = 'opened'; };
ws.onerror = () => { document.title = 'refused'; };
</script>`)
	p := b.page("F")
	p.do("open a foreign page", chromedp.Navigate(srv))
	p.wait("the outcome", `document.title === 'opened' || document.title === 'refused'`)
	if got := p.str(`document.title`); got != "refused" {
		t.Errorf("a foreign origin's websocket %s, want refused", got)
	}
	own := b.page("O")
	own.do("open the console", chromedp.Navigate(consoleURL(e)))
	own.online()

	// The accessibility check the console views pass can fail: a page with
	// an unlabelled field, a nameless button and grey-on-white text.
	bad := newForeignPage(t, `<!doctype html><title>bad</title><input id="x"><button></button><p style="color:#bbb;background:#fff">faint</p>`)
	bp := b.page("bad")
	bp.do("open a bad page", chromedp.Navigate(bad))
	got := bp.str(a11yJS)
	for _, want := range []string{"unlabelled field #x", "nameless BUTTON", `"faint"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the accessibility check found %q; want it to name %s", got, want)
		}
	}
}

// TestConsolePagingAndWorkers: a long chat opens on its latest turns and
// pages older ones in with fetchTurns when scrolled to the top; a worker
// chat is linked under the tool call that spawned it and opens from there.
func TestConsolePagingAndWorkers(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	g.Subscribe(chat)
	const total = 45
	for i := range total {
		sendTurn(t, g, chat, "old-"+strconv.Itoa(i), "old turn "+strconv.Itoa(i))
	}
	b := newBrowser(t)
	p := b.page("P")
	p.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()))
	p.online()
	p.wait("the latest turns", `!!ahpdConsole.chatState && document.querySelectorAll('.turn').length > 0 && !!`+turnJS("old turn "+strconv.Itoa(total-1)))
	first := evalAs[int](p, `document.querySelectorAll('.turn').length`)
	if first >= total {
		t.Fatalf("the chat opened with all %d turns; want a page", first)
	}
	if !evalAs[bool](p, `!!document.querySelector('#turns .older')`) {
		t.Error("no hint that older turns exist")
	}
	for range 10 {
		if evalAs[int](p, `document.querySelectorAll('.turn').length`) == total {
			break
		}
		n := evalAs[int](p, `document.querySelectorAll('.turn').length`)
		p.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`document.getElementById('turns').scrollTop = 0; document.getElementById('turns').dispatchEvent(new Event('scroll'))`))
		p.wait("older turns paged in", `document.querySelectorAll('.turn').length > `+strconv.Itoa(n))
	}
	if got := evalAs[string](p, `document.querySelector('.turn .user-msg .text').textContent`); got != "old turn 0" {
		t.Errorf("the first turn shown after paging is %q, want old turn 0", got)
	}
	if evalAs[bool](p, `!!document.querySelector('#turns .older')`) {
		t.Error("the older-turns hint stays after the last page")
	}

	p.send("[worker] go")
	p.awaitTurn("[worker] go", "complete")
	p.wait("the worker linked under its call", `!!`+turnJS("[worker] go")+`.querySelector('.tool .worker-link')`)
	// By keyboard: the link focused, Enter pressed.
	p.do("open the worker", chromedp.Evaluate[chromedp.Void](`(() => { const l = `+turnJS("[worker] go")+`.querySelector('.tool .worker-link'); l.closest('details').open = true; l.focus(); })()`),
		chromedp.KeyEvent(kb.Enter))
	p.wait("the worker chat open with its turn", `ahpdConsole.chat !== `+jsq(chat)+` && !!`+turnJS("work on: [worker] go")+` && document.querySelector('#tabs [aria-selected=true]').dataset.origin === 'tool'`)
	p.wait("a read-only composer", `document.getElementById('send').disabled && document.getElementById('message').readOnly`)
	p.noErrors()
}

// TestConsoleChangesets: what an agent changed on disk shows as a diff, per
// turn and for the whole chat, read through the changeset channels and
// resourceRead (the in-repo fake ACP agent edits a file in the chat's
// directory; its permission ask is approved in the page).
func TestConsoleChangesets(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newACPFakeEnv(t)
	g := e.client("go")
	sess := "ahp-session:/" + uuid.NewString()
	g.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	chat := sessionState(t, g, sess).DefaultChat
	notes := filepath.Join(e.workDir, "notes.txt")
	if err := os.WriteFile(notes, []byte("first\nbefore\nlast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	p := b.page("CS")
	p.do("open the chat", chromedp.Navigate(consoleURL(e.testEnv)+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()))
	p.online()
	p.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
	msg := "[edit:" + notes + "|first\nafter\nlast\n]"
	p.do("write the message", chromedp.Evaluate[chromedp.Void](`document.getElementById('message').value = `+jsq(msg)))
	p.click("#send")
	p.wait("the turn complete, its asks approved", `(() => { document.querySelectorAll('.tool[data-status=pending-confirmation] button.approve').forEach((b) => b.click()); return `+turnJS(msg)+`?.dataset.state === 'complete'; })()`)
	if got := mustRead(t, notes); got != "first\nafter\nlast\n" {
		t.Fatalf("notes.txt = %q", got)
	}
	p.wait("the turn's Changes button", `!!`+turnJS(msg)+`.querySelector('button.changes')`)
	p.do("open the turn's changes", chromedp.Evaluate[chromedp.Void](turnJS(msg)+`.querySelector('button.changes').focus()`), chromedp.KeyEvent(kb.Enter))
	diffJS := `[...document.querySelectorAll('#changes-panel .diff span')].map((s) => s.className + ':' + s.textContent.trim()).join('|')`
	p.wait("the diff", diffJS+`.includes('del:-before')`)
	if got := p.str(diffJS); got != ":first|del:-before|add:+after|:last" {
		t.Errorf("the turn's diff reads %q", got)
	}
	p.screenshot("changeset")
	p.accessible("a changeset")
	p.click("#changes-close")
	p.wait("closed", `document.getElementById('changes-panel').hidden`)
	p.click("#chat-changes")
	p.wait("the chat's diff", `document.getElementById('changes-panel').textContent.includes('notes.txt') && `+diffJS+`.includes('add:+after')`)
	p.noErrors()
}
