package daemon_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
)

// sessionRowJS is the list's row of session uri.
func sessionRowJS(uri string) string {
	return `document.querySelector('#sessions-list li[data-session=` + jsq(uri) + `]')`
}

func sessionRowSel(uri string) string {
	return `#sessions-list li[data-session="` + uri + `"]`
}

// openRowTools shows the actions of session uri's row (a row left open
// stays open across the list's redraws).
func (p *page) openRowTools(uri string) {
	p.t.Helper()
	if p.str(sessionRowJS(uri)+`?.querySelector('.row-tools-toggle')?.getAttribute('aria-expanded') || ''`) != "true" {
		p.click(sessionRowSel(uri) + ` .row-tools-toggle`)
	}
	p.wait("the row's actions", `!!`+sessionRowJS(uri)+`?.querySelector('.row-tools-menu button.session-delete')`)
}

// answerPrompt types title into the open prompt dialog and saves it.
func (p *page) answerPrompt(title string) {
	p.t.Helper()
	p.wait("the prompt", `document.activeElement?.id === 'prompt-input'`)
	p.do("clear it", chromedp.Evaluate[chromedp.Void](`document.getElementById('prompt-input').value = ''`))
	p.typeText("#prompt-input", title+kb.Enter)
	p.wait("the prompt closed", `!document.querySelector('dialog.prompt-dialog')`)
}

// TestConsoleSessionManagement: a session is renamed, archived and
// unarchived, and deleted after a confirmation, from its row in the list and
// from the open session's header, by keyboard; a second page sees each
// change live; archived sessions are listed only with "Show archived".
func TestConsoleSessionManagement(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	one, oneChat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	g.Subscribe(oneChat)
	sendTurn(t, g, oneChat, "o1", "first session")
	two, twoChat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	g.Subscribe(twoChat)
	sendTurn(t, g, twoChat, "t1", "second session")
	b := newBrowser(t)
	a := b.page("A")
	a.do("open the console", chromedp.Navigate(consoleURL(e)))
	a.online()
	w := b.page("W")
	w.do("open the console", chromedp.Navigate(consoleURL(e)))
	w.online()
	for _, p := range []*page{a, w} {
		p.wait("both sessions listed", `!!`+sessionRowJS(one)+` && !!`+sessionRowJS(two))
	}

	t.Run("from the list", func(t *testing.T) {
		defer bind(t, a, w)()
		a.do("open the row's actions by keyboard", chromedp.Evaluate[chromedp.Void](sessionRowJS(one)+`.querySelector('.row-tools-toggle').focus()`), chromedp.KeyEvent(kb.Enter))
		a.wait("the actions shown", sessionRowJS(one)+`.querySelector('.row-tools-toggle').getAttribute('aria-expanded') === 'true' && !!`+sessionRowJS(one)+`.querySelector('.row-tools-menu button.session-rename')`)
		a.do("rename by keyboard", chromedp.Evaluate[chromedp.Void](sessionRowJS(one)+`.querySelector('button.session-rename').focus()`), chromedp.KeyEvent(kb.Enter))
		a.answerPrompt("Renamed from the list")
		w.wait("W sees the new title", sessionRowJS(one)+`?.querySelector('.title').textContent === 'Renamed from the list'`)

		a.click(sessionRowSel(one) + ` button.session-archive`)
		for _, p := range []*page{a, w} {
			p.wait("the archived session out of the list", `!`+sessionRowJS(one)+` && !!`+sessionRowJS(two))
		}
		a.click("#show-archived")
		a.wait("listed again, marked archived, with Unarchive", sessionRowJS(one)+`?.querySelector('.badge.archived')?.textContent === 'archived'`)
		// The row's actions stay open where the person left them.
		a.wait("its actions, Unarchive", sessionRowJS(one)+`.querySelector('button.session-archive')?.textContent === 'Unarchive'`)
		a.accessible("the sessions list with a row's actions")
		a.click(sessionRowSel(one) + ` button.session-archive`)
		w.wait("W lists it again", `!!`+sessionRowJS(one))
		a.wait("no longer archived", `!`+sessionRowJS(one)+`.querySelector('.badge.archived')`)
		a.click("#show-archived")
	})

	t.Run("from the header", func(t *testing.T) {
		defer bind(t, a, w)()
		a.click(sessionRowSel(two) + ` button.session-item`)
		a.wait("the session open", `ahpdConsole.session === `+jsq(two)+` && !!document.querySelector('#session-tools button.session-rename')`)
		a.click(`#session-tools button.session-rename`)
		a.answerPrompt("Renamed in the header")
		a.wait("the header's title", `document.getElementById('session-title').textContent === 'Renamed in the header'`)
		w.wait("W's list", sessionRowJS(two)+`?.querySelector('.title').textContent === 'Renamed in the header'`)
		a.click(`#session-tools button.session-archive`)
		a.wait("the header says archived", `document.querySelector('#session-tools .badge.archived') && document.querySelector('#session-tools button.session-archive').textContent === 'Unarchive'`)
		w.wait("W hides it", `!`+sessionRowJS(two))
		a.click(`#session-tools button.session-archive`)
		w.wait("W lists it again", `!!`+sessionRowJS(two))

		// Delete asks first; Cancel keeps the session.
		a.click(`#session-tools button.session-delete`)
		a.wait("the confirmation, focus on Cancel", `!!document.querySelector('dialog.confirm-dialog[open]') && document.activeElement.classList.contains('confirm-no') && document.querySelector('dialog.confirm-dialog').textContent.includes('Renamed in the header')`)
		a.screenshot("session-delete-confirm")
		a.do("Escape", chromedp.KeyEvent(kb.Escape))
		a.wait("the dialog gone, the session kept", `!document.querySelector('dialog.confirm-dialog') && ahpdConsole.session === `+jsq(two))
		a.click(`#session-tools button.session-delete`)
		a.click(`dialog.confirm-dialog button.confirm-yes`)
		for _, p := range []*page{a, w} {
			p.wait("the session gone", `!`+sessionRowJS(two))
		}
		a.wait("A closed it", `ahpdConsole.session === null && !document.getElementById('no-session').hidden`)
		for _, s := range sessionList(t, g) {
			if s.Resource == two {
				t.Errorf("%s is still listed by the daemon after its delete", two)
			}
		}
	})

	t.Run("delete from the list", func(t *testing.T) {
		defer bind(t, a, w)()
		a.openRowTools(one)
		a.click(sessionRowSel(one) + ` button.session-delete`)
		a.click(`dialog.confirm-dialog button.confirm-yes`)
		w.wait("W sees it gone", `!`+sessionRowJS(one))
		if n := len(sessionList(t, g)); n != 0 {
			t.Errorf("the daemon lists %d sessions, want none", n)
		}
	})

	t.Run("360 px wide", func(t *testing.T) {
		defer bind(t, a)()
		three, threeChat := e.createSession(g, "ahp-session:/"+uuid.NewString())
		g.Subscribe(threeChat)
		g.Dispatch(threeChat, turnStarted("ask-1", "[ask] a question on a phone with a rather long message to wrap"))
		a.do("a 360 px phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
		a.do("open the session", chromedp.Navigate(consoleURL(e)+"#"+url.Values{"s": {three}, "c": {threeChat}}.Encode()), chromedp.Reload())
		a.online()
		a.wait("the question", `!!document.querySelector('.input-request button.ask-option')`)
		if bad := a.str(overflowJS(`#session-tools button, .input-request button, #composer button, .top button:not([hidden])`)); bad != "" {
			t.Errorf("at 360 px the chat view's controls do not fit: %s", bad)
		}
		a.screenshot("narrow-session-tools")
		a.click("#back")
		a.wait("the list", `getComputedStyle(document.getElementById('sessions')).display !== 'none'`)
		a.openRowTools(three)
		if bad := a.str(overflowJS(`#sessions-list button, #show-archived, #notify-toggle`)); bad != "" {
			t.Errorf("at 360 px the list's controls do not fit: %s", bad)
		}
		a.screenshot("narrow-session-list")
		a.accessible("the narrow sessions list")
		g.Dispatch(threeChat, map[string]any{"type": "chat/inputCompleted", "requestId": "ask-1-ask-1", "response": "cancel"})
		awaitEnd(t, g, threeChat, "ask-1")
	})
	a.noErrors()
	w.noErrors()
}

// overflowJS lists the visible elements matching sel that stick out of the
// viewport, and says so when the page scrolls sideways.
func overflowJS(sel string) string {
	return `(() => {
  const bad = [...document.querySelectorAll(` + jsq(sel) + `)].filter((n) => n.getClientRects().length).map((n) => {
    const r = n.getBoundingClientRect();
    return r.left < -0.5 || r.right > innerWidth + 0.5 ? (n.id || n.className) + ' "' + n.textContent.trim().slice(0, 20) + '" at ' + Math.round(r.left) + '..' + Math.round(r.right) : '';
  }).filter(Boolean);
  if (document.documentElement.scrollWidth > innerWidth + 0.5) bad.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
  return bad.join('; ');
})()`
}

// notificationStub replaces the browser's Notification with one that
// records what the page shows (window.__notes) and grants permission when
// asked (window.__asked counts the asks), and makes document.visibilityState
// follow window.__hidden, so a test can hide the page.
const notificationStub = `(() => {
  window.__notes = [];
  window.__asked = 0;
  window.__hidden = false;
  window.__permission = 'default';
  class StubNotification {
    constructor(title, opts) { this.title = title; this.body = opts && opts.body; this.tag = opts && opts.tag; this.closed = false; window.__notes.push(this); }
    close() { this.closed = true; }
    static get permission() { return window.__permission; }
    static requestPermission() { window.__asked++; window.__permission = 'granted'; return Promise.resolve('granted'); }
  }
  window.Notification = StubNotification;
  Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get() { return window.__hidden ? 'hidden' : 'visible'; } });
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get() { return window.__hidden; } });
})()`

// TestConsoleNotifications: with the page hidden, a turn that ends and an
// agent that asks each make a notification titled with the session's
// title; clicking one opens that session. Nothing is shown before the
// person turns notifications on (which asks the browser's permission),
// while the page is visible, or after they turn them off.
func TestConsoleNotifications(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	g.Subscribe(chat)
	sendTurn(t, g, chat, "n0", "notify me please")
	b := newBrowser(t)
	p := b.page("N")
	p.do("stub Notification", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: notificationStub})
		return err
	}))
	p.do("open the console", chromedp.Navigate(consoleURL(e)))
	p.online()
	p.wait("the session listed", `!!`+sessionRowJS(sess))
	title := p.str(sessionRowJS(sess) + `.querySelector('.title').textContent`)
	p.wait("the toggle offered, off", `document.getElementById('notify-toggle').textContent === 'Notify me' && document.getElementById('notify-toggle').getAttribute('aria-pressed') === 'false'`)

	turn := 0
	// ended runs a turn from the Go client and waits until the page's list
	// has seen it end.
	ended := func(text string) {
		t.Helper()
		turn++
		before := p.str(`ahpdConsole.sessions.get(` + jsq(sess) + `).modifiedAt`)
		sendTurn(t, g, chat, "n"+string(rune('0'+turn)), text)
		p.wait("the list saw the turn end", `ahpdConsole.sessions.get(`+jsq(sess)+`).modifiedAt !== `+jsq(before)+` && document.querySelector('#sessions-list li[data-session=`+jsq(sess)+`] .status').textContent === 'idle'`)
	}
	notes := func() int { return evalAs[int](p, `window.__notes.length`) }

	p.do("hide the page", chromedp.Evaluate[chromedp.Void](`window.__hidden = true`))
	ended("while off")
	if n := notes(); n != 0 {
		t.Fatalf("%d notifications before they were turned on", n)
	}

	p.click("#notify-toggle")
	p.wait("permission asked, notifications on", `window.__asked === 1 && document.getElementById('notify-toggle').getAttribute('aria-pressed') === 'true'`)

	p.do("show the page", chromedp.Evaluate[chromedp.Void](`window.__hidden = false`))
	ended("while visible")
	if n := notes(); n != 0 {
		t.Fatalf("%d notifications while the page was visible", n)
	}

	p.do("hide the page", chromedp.Evaluate[chromedp.Void](`window.__hidden = true`))
	ended("while hidden")
	p.wait("a notification of the end", `window.__notes.length === 1 && window.__notes[0].body === 'The turn ended.'`)
	if got := p.str(`window.__notes[0].title + '|' + window.__notes[0].tag`); got != title+"|"+sess {
		t.Errorf("the notification is %q, want the session's title and uri %q", got, title+"|"+sess)
	}

	g.Dispatch(chat, turnStarted("ask", "[ask] while hidden"))
	p.wait("a notification of the question", `window.__notes.some((n) => n.body === 'The agent asks a question.')`)
	g.Dispatch(chat, map[string]any{"type": "chat/inputCompleted", "requestId": "ask-ask-1", "response": "accept",
		"answers": map[string]any{"colour": map[string]any{"state": "submitted", "value": map[string]any{"kind": "selected", "value": "blue"}}}})
	if got := awaitEnd(t, g, chat, "ask"); got.Type() != "chat/turnComplete" {
		t.Fatalf("the asked turn ended %s", got.Type())
	}
	p.wait("a notification of its end", `window.__notes.length === 3 && window.__notes[2].body === 'The turn ended.'`)

	p.do("click the notification", chromedp.Evaluate[chromedp.Void](`window.__hidden = false; window.__notes[2].onclick()`))
	p.wait("the session open, the notification closed", `ahpdConsole.session === `+jsq(sess)+` && !!ahpdConsole.chatState && window.__notes[2].closed`)

	p.click("#notify-toggle")
	p.wait("off", `document.getElementById('notify-toggle').getAttribute('aria-pressed') === 'false'`)
	p.do("hide the page", chromedp.Evaluate[chromedp.Void](`window.__hidden = true`))
	ended("after turning them off")
	if n := notes(); n != 3 {
		t.Errorf("%d notifications after turning them off, want the 3 from before", n)
	}
	if got := p.str(`String(window.__asked)`); !strings.HasPrefix(got, "1") {
		t.Errorf("the permission was asked %s times, want once", got)
	}
	p.noErrors()
}
