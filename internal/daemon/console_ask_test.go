package daemon_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// askJS is the input request form of the turn whose message is text.
func askJS(text string) string {
	return `(` + turnJS(text) + `?.querySelector('.input-request'))`
}

// TestConsoleAsk: an agent's input request ([ask]: "Pick a colour", red or
// blue) shows in the turn as a form with a button per option, on every page
// on the chat; a press of "red" answers it with chat/inputCompleted, the
// turn ends "You picked red", and the other page shows it answered.
func TestConsoleAsk(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newConsoleEnv(t)
	g := e.client("go")
	sess, chat := e.createSession(g, "ahp-session:/"+uuid.NewString())
	b := newBrowser(t)
	open := url.Values{"s": {sess}, "c": {chat}}.Encode()
	a := b.page("A")
	a.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+open))
	a.online()
	a.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
	bp := b.page("B")
	bp.do("open the chat", chromedp.Navigate(consoleURL(e)+"#"+open))
	bp.online()
	bp.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)

	msg := "[ask] which one"
	a.send(msg)
	for _, p := range []*page{a, bp} {
		p.wait("the question with a button per option", askJS(msg)+`?.querySelector('.ask-title')?.textContent === 'Pick a colour' && [...`+askJS(msg)+`.querySelectorAll('button.ask-option')].map((b) => b.textContent).join('|') === 'red|blue'`)
	}
	bp.wait("the session needs input", `document.querySelector('#sessions-list li[data-session=`+jsq(sess)+`] .status')?.textContent === 'needs input'`)
	a.screenshot("input-request")
	a.accessible("an input request")

	a.click(`.input-request button.ask-option[data-option="red"]`)
	a.awaitTurn(msg, "complete")
	if got := a.str(`(` + turnJS(msg) + `.querySelector('.part-md').textContent)`); got != "You picked red" {
		t.Errorf("the turn ends %q, want \"You picked red\"", got)
	}
	bp.awaitTurn(msg, "complete")
	bp.wait("B shows it answered, with the answer", askJS(msg)+`?.dataset.response === 'accept' && `+askJS(msg)+`.querySelector('.ask-answers')?.textContent === 'Colour: red' && !`+askJS(msg)+`.querySelector('button')`)
	if got := bp.str(`(` + turnJS(msg) + `.querySelector('.part-md').textContent)`); got != "You picked red" {
		t.Errorf("B shows %q, want \"You picked red\"", got)
	}

	// Declined from the other page: the agent hears the decline.
	decline := "[ask] not this time"
	bp.send(decline)
	bp.wait("the question", `!!`+askJS(decline)+`?.querySelector('button.ask-decline')`)
	bp.click(`.input-request button.ask-decline`)
	a.awaitTurn(decline, "complete")
	a.wait("A sees the decline", askJS(decline)+`?.dataset.response === 'decline' && `+answerJS(decline)+`.includes('You picked nothing (decline)')`)

	// Every question kind AHP defines draws its control, and the form's
	// answer is what was entered, each as its kind's value.
	a.do("load the form module", chromedp.Evaluate[chromedp.Void](`import('/console/ask.js').then((m) => { window.__ask = m; })`))
	a.wait("loaded", `!!window.__ask`)
	got := a.str(`(() => {
  const el = (tag, attrs = {}, ...kids) => { const n = document.createElement(tag); for (const [k, v] of Object.entries(attrs)) { if (v === undefined || v === null || v === false) continue; if (k === 'class') n.className = v; else if (k === 'text') n.textContent = v; else if (k.startsWith('on')) n.addEventListener(k.slice(2), v); else if (k === 'dataset') Object.assign(n.dataset, v); else n.setAttribute(k, v === true ? '' : v); } for (const c of kids) if (c != null) n.append(c); return n; };
  const sent = [];
  const act = (x) => { sent.push(x); return sent.length; };
  const req = { id: 'r1', message: 'Tell me', questions: [
    { id: 'mail', kind: 'text', message: 'Your mail', format: 'email', required: true },
    { id: 'n', kind: 'number', message: 'A number' },
    { id: 'i', kind: 'integer', message: 'A count', min: 1, max: 9 },
    { id: 'ok', kind: 'boolean', message: 'Sure?' },
    { id: 'one', kind: 'single-select', message: 'One', options: [{ id: 'a', label: 'A' }, { id: 'b', label: 'B' }], allowFreeformInput: true },
    { id: 'many', kind: 'multi-select', message: 'Many', options: [{ id: 'x', label: 'X' }, { id: 'y', label: 'Y' }, { id: 'z', label: 'Z' }] },
  ] };
  const f = window.__ask.renderInputRequest({ kind: 'inputRequest', request: req }, { id: 't9' }, true, { el, act, chat: 'test' });
  document.body.append(f);
  const kinds = [...f.querySelectorAll('fieldset')].map((q) => q.dataset.kind + ':' + [...q.querySelectorAll('input, textarea, button')].map((c) => c.type + (c.dataset.option ? '=' + c.dataset.option : '')).join(',')).join(' ');
  f.querySelector('.ask-submit').click();
  const refused = (f.querySelector(':invalid')?.closest('fieldset')?.dataset.question || 'none invalid') + ' sent=' + sent.length;
  f.querySelector('[data-question=mail] input').value = 'me@example.com';
  f.querySelector('[data-question=n] input').value = '2.5';
  f.querySelector('[data-question=i] input').value = '3';
  f.querySelector('[data-question=ok] button[data-option=true]').click();
  f.querySelector('[data-question=one] button[data-option=b]').click();
  f.querySelectorAll('[data-question=many] input')[0].click();
  f.querySelectorAll('[data-question=many] input')[2].click();
  sent.length = 0;
  f.querySelector('.ask-submit').click();
  const done = sent.find((x) => x.type === 'chat/inputCompleted');
  f.remove();
  // Another page's drafts show in a drawn form, except in the question
  // the person is in.
  const part = { kind: 'inputRequest', request: { ...req, id: 'r3' } };
  const g = window.__ask.renderInputRequest(part, { id: 't9' }, true, { el, act, chat: 'test' });
  document.body.append(g);
  g.querySelector('[data-question=mail] input').focus();
  const draft = (kind, value) => ({ state: 'draft', value: { kind, value } });
  const again = window.__ask.renderInputRequest({ kind: 'inputRequest', request: { ...part.request, answers: { mail: draft('text', 'other@example.com'), i: draft('number', 7), ok: draft('boolean', false), one: draft('selected', 'a'), many: draft('selected-many', ['y']) } } }, { id: 't9' }, true, { el, act, chat: 'test' });
  const synced = [again === g, g.querySelector('[data-question=mail] input').value, g.querySelector('[data-question=i] input').value, g.querySelector('[data-question=ok] [aria-checked=true]')?.dataset.option, g.querySelector('[data-question=one] [aria-checked=true]')?.dataset.option, [...g.querySelectorAll('[data-question=many] input')].map((c) => c.checked).join('/')].join(',');
  g.remove();
  const bare = window.__ask.renderInputRequest({ kind: 'inputRequest', request: { id: 'r2', message: 'Go on?', url: 'javascript:alert(1)' } }, { id: 't9' }, true, { el, act, chat: 'test' });
  return JSON.stringify({ kinds, refused, done, synced, bare: [...bare.querySelectorAll('button')].map((b) => b.textContent).join('|') + ' links=' + bare.querySelectorAll('a').length });
})()`)
	for _, want := range []string{
		`text:email`, `number:number`, `integer:number`, `boolean:button=true,button=false`,
		`single-select:button=a,button=b,text multi`, `multi-select:checkbox,checkbox,checkbox`,
		`"refused":"mail sent=0"`,
		`"mail":{"state":"submitted","value":{"kind":"text","value":"me@example.com"}}`,
		`"n":{"state":"submitted","value":{"kind":"number","value":2.5}}`,
		`"i":{"state":"submitted","value":{"kind":"number","value":3}}`,
		`"ok":{"state":"submitted","value":{"kind":"boolean","value":true}}`,
		`"one":{"state":"submitted","value":{"kind":"selected","value":"b"}}`,
		`"many":{"state":"submitted","value":{"kind":"selected-many","value":["x","z"]}}`,
		`"response":"accept"`,
		`"bare":"Accept|Decline|Dismiss links=0"`,
		`"synced":"true,,7,false,a,false/true/false"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the form of every kind: %s\nwant it to hold %s", got, want)
		}
	}
	a.noErrors()
	bp.noErrors()
}
