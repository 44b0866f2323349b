package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/daemon"
)

// newWorkplaceEnv is a console daemon whose script agent offers two models
// and a setting of its own, so the new session form has choices to make.
func newWorkplaceEnv(t *testing.T) *testEnv {
	t.Helper()
	return newScriptEnv(t, script.Options{
		SlowDelay: 150 * time.Millisecond,
		Models:    []agent.Model{{ID: "script", Name: "Script"}, {ID: "script-large", Name: "Script Large"}},
		Config: []agent.ConfigProperty{{Key: "tone", Title: "Tone", Description: "How the script answers.",
			Enum: []string{"plain", "terse"}, EnumLabels: []string{"Plain", "Terse"}, Default: "plain"}},
	}, false)
}

// TestConsoleNewSessionOptions: the new session form offers the agent's
// models and settings from resolveSessionConfig and a folder completed from
// the served paths with resourceList; a session made with a chosen model,
// setting and folder carries them in its state. A folder outside the
// served paths is refused, in the form, before anything is created.
func TestConsoleNewSessionOptions(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newWorkplaceEnv(t)
	sub := filepath.Join(e.workDir, "project-one")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	p := b.page("N")
	p.do("open the console", chromedp.Navigate(consoleURL(e)))
	p.online()
	p.wait("the script agent offered", `document.getElementById('provider').value === 'script'`)
	p.click("#new-session-more")
	p.wait("the model and the setting", `document.getElementById('ns-prop-model')?.options.length === 2 && !!document.getElementById('ns-prop-tone') && !!document.getElementById('ns-prop-isolation')`)
	if got := p.str(`document.getElementById('ns-folder').value`); got != e.workDir {
		t.Errorf("the folder starts at %q, want the default directory %q", got, e.workDir)
	}
	p.do("type the folder's start", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('ns-folder'); f.value = `+jsq(e.workDir+"/proj")+`; f.dispatchEvent(new Event('input')); })()`))
	p.wait("the served folder's subfolders offered", `[...document.querySelectorAll('#ns-folder-list option')].some((o) => o.value === `+jsq(sub)+`)`)
	p.screenshot("new-session-options")
	p.accessible("the new session options")

	// A folder outside the served paths: the form says so.
	p.do("a folder outside", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('ns-folder'); f.value = '/'; f.dispatchEvent(new Event('input')); })()`))
	p.wait("the refusal", `document.getElementById('ns-error').textContent.includes('outside')`)

	p.do("pick the folder, the model and the setting", chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.getElementById('ns-folder'); f.value = `+jsq(sub)+`; f.dispatchEvent(new Event('input'));
	})()`))
	p.wait("the schema again", `document.getElementById('ns-error').textContent === '' && !!document.getElementById('ns-prop-model')`)
	p.do("choose", chromedp.Evaluate[chromedp.Void](`(() => {
		const m = document.getElementById('ns-prop-model'); m.value = 'script-large'; m.dispatchEvent(new Event('change'));
	})()`))
	p.wait("the model kept after the schema came again", `document.getElementById('ns-prop-model')?.value === 'script-large' && !!document.getElementById('ns-prop-tone')`)
	p.do("choose the tone", chromedp.Evaluate[chromedp.Void](`(() => {
		const t = document.getElementById('ns-prop-tone'); t.value = 'terse'; t.dispatchEvent(new Event('change'));
	})()`))
	p.wait("the tone kept", `document.getElementById('ns-prop-tone')?.value === 'terse'`)
	p.click("#new-session")
	p.wait("the new session open", `!!ahpdConsole.session && !!ahpdConsole.sessionState && !!ahpdConsole.chatState`)
	sess := p.str(`ahpdConsole.session`)

	g := e.client("go")
	st := sessionState(t, g, sess)
	var values map[string]any
	if st.Config != nil {
		values = st.Config.Values
	}
	if values["model"] != "script-large" || values["tone"] != "terse" {
		t.Errorf("the session's config values are %v, want model script-large and tone terse", values)
	}
	if want := (&url.URL{Scheme: "file", Path: sub}).String(); len(st.WorkingDirectories) != 1 || string(st.WorkingDirectories[0]) != want {
		t.Errorf("the session works in %v, want [%s]", st.WorkingDirectories, want)
	}
	// The turn runs on the chosen model (its usage names it).
	p.send("which model")
	p.awaitTurn("which model", "complete")
	p.wait("the turn's usage names the model", `(`+turnJS("which model")+`.querySelector('.usage')?.title || '').includes('script-large')`)
	p.noErrors()
}

// TestConsoleUnavailableAgent: an agent that cannot run here is listed
// disabled, with the reason the host gives.
func TestConsoleUnavailableAgent(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	sc := script.New(script.Options{})
	reg, err := agent.NewRegistry(sc, unavailableAgent{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, reg)
	b := newBrowser(t)
	p := b.page("U")
	p.do("open the console", chromedp.Navigate(consoleURL(e)))
	p.online()
	p.wait("the agents listed", `document.querySelectorAll('#provider option').length === 2`)
	if got := p.str(`(() => { const o = document.querySelector('#provider option[value="missing"]'); return o.disabled + '|' + o.textContent + '|' + document.getElementById('provider-note').textContent; })()`); !strings.HasPrefix(got, "true|Missing (unavailable)|") || !strings.Contains(got, "the missing CLI is not installed") {
		t.Errorf("the unavailable agent shows as %q", got)
	}
	if got := p.str(`document.getElementById('provider').value`); got != "script" {
		t.Errorf("the agent picked is %q, want script", got)
	}
	p.noErrors()
}

// unavailableAgent is a backend that says it cannot run here.
type unavailableAgent struct{}

func (unavailableAgent) Provider() string { return "missing" }
func (unavailableAgent) Info(ctx context.Context) agent.Info {
	return agent.Info{Provider: "missing", DisplayName: "Missing", Unavailable: "the missing CLI is not installed"}
}
func (unavailableAgent) Capabilities() agent.Capabilities { return agent.Capabilities{} }
func (unavailableAgent) Open(ctx context.Context, p agent.OpenParams) (agent.Conversation, error) {
	return nil, errors.New("the missing CLI is not installed")
}
func (unavailableAgent) Delete(ctx context.Context, conversationID string, directories []string) error {
	return nil
}

// TestConsoleUsage: each turn's footer shows the tokens it used and its
// cost (the script agent reports both), and the session's header their
// totals.
func TestConsoleUsage(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	b := newBrowser(t)
	p := b.page("US")
	p.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()))
	p.online()
	p.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
	p.send("hello")
	p.awaitTurn("hello", "complete")
	p.send("and again")
	p.awaitTurn("and again", "complete")

	// What the host stored, to compare the page with.
	raw, _ := g.Subscribe(chat)
	st := chatState(t, raw)
	var in, out int64
	var cost float64
	for _, tr := range st.Turns {
		if tr.Usage == nil {
			t.Fatalf("turn %q has no usage", tr.Message.Text)
		}
		in += tr.Usage.InputTokens
		out += tr.Usage.OutputTokens
		c, _ := tr.Usage.Meta[ahp.MetaCost].(map[string]any)
		amount, _ := c["amount"].(float64)
		if amount <= 0 || c["currency"] != "USD" {
			t.Fatalf("turn %q reports cost %v", tr.Message.Text, tr.Usage.Meta)
		}
		cost += amount
		want := strconv.FormatInt(tr.Usage.InputTokens, 10) + " in · " + strconv.FormatInt(tr.Usage.OutputTokens, 10) + " out · $"
		if got := p.str(`(` + turnJS(tr.Message.Text) + `.querySelector('.turn-foot .usage')?.textContent ?? '')`); !strings.HasPrefix(got, want) {
			t.Errorf("turn %q's footer shows %q, want it to start %q", tr.Message.Text, got, want)
		}
	}
	want := "Session usage: " + strconv.FormatInt(in, 10) + " in · " + strconv.FormatInt(out, 10) + " out · $" + strconv.FormatFloat(cost, 'f', 4, 64)
	p.wait("the session's totals", `document.getElementById('session-usage').textContent === `+jsq(want))
	p.screenshot("usage")
	p.noErrors()
}

// TestConsoleTerminals: a ! command's terminal is drawn live by xterm.js
// in its turn; the Terminals panel lists the host's terminals, opens a new
// one and types into it, and the output comes back into the view.
func TestConsoleTerminals(t *testing.T) {
	chromiumPath(t)
	// A new terminal runs $SHELL: a plain one, not the machine's bash with
	// whatever its rc files run first.
	t.Setenv("SHELL", "/bin/sh")
	e := newConsoleEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	b := newBrowser(t)
	p := b.page("TM")
	p.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()))
	p.online()
	p.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)

	p.send("!printf 'term-%s\\n' xterm-output")
	p.wait("the command's terminal drawn by xterm", `[...document.querySelectorAll('.turn .term-view .xterm-rows')].some((n) => n.textContent.includes('term-xterm-output'))`)
	p.wait("its turn done", turnJS("!printf 'term-%s\\n' xterm-output")+`?.dataset.state === 'complete'`)
	p.screenshot("bang-terminal")

	p.click("#show-terminals")
	p.wait("the panel open, the chat out of the way", `!document.getElementById('terminals-panel').hidden && document.getElementById('session').hidden`)
	p.wait("the ! command's terminal listed", `document.querySelectorAll('#terminals-list li[data-terminal]').length >= 1`)
	p.click("#new-terminal")
	p.wait("a new terminal open in the panel", `!!document.querySelector('#terminal-host .term-view .xterm-rows') && document.querySelectorAll('#terminals-list li[data-terminal]').length >= 2`)
	// Typed after the shell's prompt: a shell that sets its terminal up may
	// flush what was typed before.
	p.wait("the shell's prompt", `document.querySelector('#terminal-host .term-view .term-state')?.textContent.startsWith('running') && document.querySelector('#terminal-host .xterm-rows').textContent.trim() !== ''`)
	p.do("type a command", chromedp.Evaluate[chromedp.Void](`document.querySelector('#terminal-host .xterm-helper-textarea').focus()`))
	// Typed as an input method would (Chromium's synthetic key events reach
	// xterm.js's textarea twice), then Enter as a key.
	p.do("type", insertText("echo typed-$((6*7))"), chromedp.KeyEvent(kb.Enter))
	p.wait("its output in the view", `document.querySelector('#terminal-host .xterm-rows').textContent.includes('typed-42')`)
	// The terminal this page opened has the view's size on the host too.
	mine := p.str(`document.querySelector('#terminal-host .term-view').dataset.terminal`)
	p.do("load the terminal module", chromedp.Evaluate[chromedp.Void](`import('/console/terminal.js').then((m) => { window.__term = m; })`))
	p.wait("the module", `!!window.__term`)
	cols := evalAs[int](p, `window.__term.terminalSize(`+jsq(mine)+`).cols`)
	// The page sent its size as the view opened, before anything was typed.
	raw, _ := g.Subscribe(mine)
	var ts ahp.TerminalState
	if err := json.Unmarshal(raw, &ts); err != nil || ts.Cols == nil || *ts.Cols != cols {
		t.Errorf("the host's terminal has %v columns (%v), the view %d", ts.Cols, err, cols)
	}
	p.screenshot("terminals")
	p.accessible("the terminals panel")

	// A terminal another client opened: root may read it, the host refuses
	// a viewer that is not its opener nor root nothing here (the page is
	// root), so its input is taken too; its exit makes the view read-only.
	term := "ahp-terminal:/" + uuid.NewString()
	g.MustCall("createTerminal", map[string]any{"channel": term, "claim": map[string]any{"kind": "client", "clientId": "go"}, "cols": 80, "rows": 24})
	p.wait("the Go client's terminal listed", `!!document.querySelector('#terminals-list li[data-terminal=`+jsq(term)+`] button')`)
	p.click(`#terminals-list li[data-terminal="` + term + `"] button`)
	p.wait("it open", `document.querySelector('#terminal-host .term-view')?.dataset.terminal === `+jsq(term))
	g.MustCall("disposeTerminal", map[string]any{"channel": term})
	p.wait("the list without it", `!document.querySelector('#terminals-list li[data-terminal=`+jsq(term)+`]')`)
	p.click(`#terminals-panel .panel-close`)
	p.wait("the chat back", `document.getElementById('terminals-panel').hidden && !document.getElementById('session').hidden`)
	p.noErrors()
}

// TestConsoleHostLogs: the Logs panel shows the host's own log records
// from the OTLP log channel, and the level filter hides those below it.
func TestConsoleHostLogs(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	b := newBrowser(t)
	p := b.page("L")
	p.do("open the console", chromedp.Navigate(consoleURL(e)))
	p.online()
	p.click("#show-logs")
	p.wait("subscribed at info", `document.getElementById('logs-status').textContent.includes('at info and above')`)
	// The host logs a malformed dispatchAction at info.
	g.Notify("dispatchAction", map[string]any{"channel": "ahp-chat:/" + uuid.NewString(), "clientSeq": 1, "action": json.RawMessage(`{"type":7}`)})
	line := `[...document.querySelectorAll('#log-lines li')].find((n) => n.textContent.includes('refused malformed dispatchAction'))`
	p.wait("the host's log line shown", `!!`+line+` && !`+line+`.hidden && `+line+`.dataset.level === 'info'`)
	p.screenshot("logs")
	p.accessible("the logs panel")
	p.do("filter to warn", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('log-level'); s.value = 'warn'; s.dispatchEvent(new Event('change')); })()`))
	p.wait("the line hidden", line+`.hidden && document.getElementById('logs-status').textContent.includes('at warn and above')`)
	p.do("back to debug", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('log-level'); s.value = 'debug'; s.dispatchEvent(new Event('change')); })()`))
	p.wait("the line shown again", `!`+line+`.hidden`)
	p.noErrors()
}

// TestConsoleWorkplaceNarrow: the new views fit a 360 px wide screen: the
// new session options, a turn with its usage and terminal, the Terminals
// and Logs panels; nothing is wider than the screen but a terminal's own
// scroller.
func TestConsoleWorkplaceNarrow(t *testing.T) {
	chromiumPath(t)
	t.Setenv("SHELL", "/bin/sh")
	e := newWorkplaceEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	b := newBrowser(t)
	p := b.page("W")
	p.do("a 360 px phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	p.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()))
	p.online()
	p.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
	p.send("!echo narrow-bang")
	p.wait("the terminal drawn", `[...document.querySelectorAll('.turn .term-view .xterm-rows')].some((n) => n.textContent.includes('narrow-bang'))`)
	p.send("a turn with usage")
	p.awaitTurn("a turn with usage", "complete")
	p.wait("the usage shown", `!!`+turnJS("a turn with usage")+`.querySelector('.usage') && !document.getElementById('session-usage').hidden`)
	fits := func(view string) {
		t.Helper()
		if got := p.str(pastRightEdgeJS); got != "" {
			t.Errorf("%s at 360 px: wider than the screen: %s", view, got)
		}
		p.accessible(view + " at 360 px")
	}
	fits("a chat with usage and a terminal")
	p.screenshot("narrow-workplace-chat")

	p.click("#back")
	p.click("#new-session-more")
	p.wait("the options", `!!document.getElementById('ns-prop-model')`)
	fits("the new session options")
	p.screenshot("narrow-new-session")

	p.click("#show-terminals")
	p.wait("the terminals panel", `!document.getElementById('terminals-panel').hidden && getComputedStyle(document.getElementById('terminals-panel')).display !== 'none'`)
	p.click("#new-terminal")
	p.wait("a terminal open", `!!document.querySelector('#terminal-host .xterm-rows')`)
	fits("the terminals panel")
	p.screenshot("narrow-terminals")

	p.click("#show-logs")
	p.wait("the logs panel", `getComputedStyle(document.getElementById('logs-panel')).display !== 'none' && document.getElementById('terminals-panel').hidden`)
	fits("the logs panel")
	p.screenshot("narrow-logs")
	p.noErrors()
}

// pastRightEdgeJS names the visible elements that reach past the right edge
// of the screen, leaving out what is inside a terminal view (it scrolls
// sideways in its own box).
const pastRightEdgeJS = `(() => {
  const w = document.documentElement.clientWidth;
  const bad = [];
  if (document.documentElement.scrollWidth > w + 1) bad.push('the page scrolls sideways (' + document.documentElement.scrollWidth + ' > ' + w + ')');
  for (const n of document.querySelectorAll('body *')) {
    if (n.closest('.term-view .xterm, .sr-only, .xterm-helper-textarea') || !n.getClientRects().length) continue;
    const r = n.getBoundingClientRect();
    if (r.right > w + 1 && getComputedStyle(n).visibility !== 'hidden') bad.push((n.id ? '#' + n.id : n.tagName + '.' + n.className) + ' ends at ' + Math.round(r.right));
    if (bad.length > 8) break;
  }
  return bad.join('; ');
})()`

// insertText types text into the focused element as an input method
// would: one input event, no key events.
func insertText(text string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return chromedp.Void{}, err
	}
}

// TestConsoleTerminalRefusals: the host decides who may type into a
// terminal and read the logs, and the page shows its refusals. A viewer
// whose token may read terminals but not write them sees a running !
// command's terminal; what they type is refused and the view turns
// read-only with the host's reason; their Logs panel says it may not read
// the logs. Root, in another page, types the line the command waits for.
func TestConsoleTerminalRefusals(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{{Token: "viewer-token", Principal: "user:viewer",
			Grants: []string{auth.SessionList, auth.SessionState, auth.ChatTurns, auth.TerminalRead}}}
	})
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	g.Subscribe(chat)
	cmd := "!read line; echo got-$line"
	g.Dispatch(chat, turnStarted("waits", cmd))

	b := newBrowser(t)
	withToken := func(name, token string) *page {
		p := b.page(name)
		p.do("open the console", chromedp.Navigate(consoleURL(e)))
		p.do("keep the token", chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem('ahpd.token', `+jsq(token)+`)`))
		p.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+url.Values{"s": {sess}, "c": {chat}}.Encode()), chromedp.Reload())
		p.online()
		p.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
		return p
	}
	view := `document.querySelector('.turn .term-view')`
	v := withToken("viewer", "viewer-token")
	v.wait("the running command's terminal", `!!`+view+` && `+view+`.querySelector('.term-state').textContent.startsWith('running')`)
	v.do("type into it", chromedp.Evaluate[chromedp.Void](view+`.querySelector('.xterm-helper-textarea').focus()`), insertText("nope"))
	v.wait("refused: read-only with the host's reason", `(`+view+`.dataset.readOnly || '').includes('terminal:write') && `+view+`.querySelector('.term-state').textContent.includes('read-only')`)
	v.click("#show-logs")
	v.wait("the logs refused", `document.getElementById('logs-status').textContent.includes('Cannot read the logs') && document.getElementById('logs-status').textContent.includes('host:logs')`)

	r := withToken("root", "root-token")
	r.wait("the running command's terminal", `!!`+view+` && `+view+`.querySelector('.term-state').textContent.startsWith('running')`)
	r.do("type the line", chromedp.Evaluate[chromedp.Void](view+`.querySelector('.xterm-helper-textarea').focus()`), insertText("typed-by-root"), chromedp.KeyEvent(kb.Enter))
	r.awaitTurn(cmd, "complete")
	v.wait("the viewer sees the answer", `[...document.querySelectorAll('.turn .term-view .xterm-rows')].some((n) => n.textContent.includes('got-typed-by-root'))`)
	v.noErrors()
	r.noErrors()
}
