package daemon_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
)

// csFileJS is the changes panel's section of the file named name.
func csFileJS(name string) string {
	return `([...document.querySelectorAll('#changes-panel .file-edit')].find((n) => n.dataset.file.endsWith('/' + ` + jsq(name) + `)))`
}

// TestConsoleChangesetReview: a turn's changeset is reviewed in the page
// with the host's own operations: Keep of one file marks it kept, Undo of
// another (after its confirmation) restores it on disk and takes it out of
// the list, on a second page too, live; an undo the host refuses (the file
// changed since) shows the refusal; Undo of the whole changeset restores
// the rest.
func TestConsoleChangesetReview(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newACPFakeEnv(t)
	g := e.client("go")
	sess := "ahp-session:/" + uuid.NewString()
	g.MustCall("createSession", map[string]any{"channel": sess, "provider": "fake-acp"})
	chat := sessionState(t, g, sess).DefaultChat
	alpha, beta := filepath.Join(e.workDir, "alpha.txt"), filepath.Join(e.workDir, "beta.txt")
	for _, f := range []string{alpha, beta} {
		if err := os.WriteFile(f, []byte("first\nbefore\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t)
	open := consoleURL(e.testEnv) + "#" + url.Values{"s": {sess}, "c": {chat}}.Encode()
	p := b.page("R")
	p.do("open the chat", chromedp.Navigate(open))
	p.online()
	p.wait("the chat open", `ahpdConsole.chat === `+jsq(chat)+` && !!ahpdConsole.chatState`)
	msg := "[edit:" + alpha + "|first\nafter\n][edit:" + beta + "|first\nafter\n]"
	p.do("write the message", chromedp.Evaluate[chromedp.Void](`document.getElementById('message').value = `+jsq(msg)))
	p.click("#send")
	p.wait("the turn complete, its asks approved", `(() => { document.querySelectorAll('.tool[data-status=pending-confirmation] button.approve').forEach((b) => b.click()); return `+turnJS(msg)+`?.dataset.state === 'complete'; })()`)
	p.wait("the turn's Changes button", `!!`+turnJS(msg)+`?.querySelector('button.changes')`)
	p.click(`.turn button.changes`)
	p.wait("both files with Keep and Undo each, and for all", csFileJS("alpha.txt")+`?.querySelectorAll('button.cs-op').length === 2 && !!`+csFileJS("beta.txt")+` && !!document.querySelector('#changes-panel .cs-head button.cs-op-keep') && !!document.querySelector('#changes-panel .cs-head button.cs-op-undo')`)
	p.wait("alpha's diff", csFileJS("alpha.txt")+`.querySelector('.diff').textContent.includes('+after')`)

	// A second page on the same changeset sees what the first does, live.
	q := b.page("R2")
	q.do("open the chat", chromedp.Navigate(open))
	q.online()
	q.wait("the turn's Changes button", `!!`+turnJS(msg)+`?.querySelector('button.changes')`)
	q.click(`.turn button.changes`)
	q.wait("both files", `!!`+csFileJS("alpha.txt")+` && !!`+csFileJS("beta.txt"))

	// Keep one file, by keyboard.
	p.do("keep alpha", chromedp.Evaluate[chromedp.Void](csFileJS("alpha.txt")+`.querySelector('button.cs-op-keep').focus()`), chromedp.KeyEvent(kb.Enter))
	for _, pg := range []*page{p, q} {
		pg.wait("alpha kept, beta not", csFileJS("alpha.txt")+`?.dataset.reviewed === 'true' && `+csFileJS("beta.txt")+`?.dataset.reviewed === 'false'`)
	}
	p.wait("the progress says so", `document.querySelector('#changes-panel .cs-progress').textContent.includes('1 kept')`)

	// Undo asks first; Cancel leaves the file alone.
	p.click(csFileJSSel("beta.txt") + ` button.cs-op-undo`)
	p.wait("the confirmation", `!!document.querySelector('dialog.confirm-dialog[open]') && document.activeElement.classList.contains('confirm-no')`)
	p.screenshot("changeset-undo-confirm")
	p.click(`dialog.confirm-dialog button.confirm-no`)
	p.wait("the dialog gone", `!document.querySelector('dialog.confirm-dialog')`)
	if got := mustRead(t, beta); got != "first\nafter\n" {
		t.Fatalf("after a cancelled undo beta.txt = %q", got)
	}
	p.click(csFileJSSel("beta.txt") + ` button.cs-op-undo`)
	p.wait("the confirmation", `!!document.querySelector('dialog.confirm-dialog[open]')`)
	p.click(`dialog.confirm-dialog button.confirm-yes`)
	for _, pg := range []*page{p, q} {
		pg.wait("beta out of the list, alpha in it", `!`+csFileJS("beta.txt")+` && !!`+csFileJS("alpha.txt"))
	}
	if got := mustRead(t, beta); got != "first\nbefore\n" {
		t.Errorf("after the undo beta.txt = %q, want its contents from before the turn", got)
	}

	// The host refuses to undo a file changed since the turn: the page says why.
	if err := os.WriteFile(alpha, []byte("changed by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.click(csFileJSSel("alpha.txt") + ` button.cs-op-undo`)
	p.click(`dialog.confirm-dialog button.confirm-yes`)
	p.wait("the refusal", csFileJS("alpha.txt")+`?.querySelector('.cs-error')?.textContent.includes('changed since the turn')`)
	p.accessible("a changeset with a refusal")
	if got := mustRead(t, alpha); got != "changed by hand\n" {
		t.Errorf("a refused undo wrote alpha.txt: %q", got)
	}

	// Undo of the whole changeset.
	if err := os.WriteFile(alpha, []byte("first\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.click(`#changes-panel .cs-head button.cs-op-undo`)
	p.click(`dialog.confirm-dialog button.confirm-yes`)
	for _, pg := range []*page{p, q} {
		pg.wait("no changes left", `document.querySelectorAll('#changes-panel .file-edit').length === 0 && document.getElementById('changes-panel').textContent.includes('No changes.')`)
	}
	if got := mustRead(t, alpha); got != "first\nbefore\n" {
		t.Errorf("after undoing everything alpha.txt = %q", got)
	}
	p.noErrors()
	q.noErrors()
}

// csFileJSSel is a CSS selector of the changes panel's section of file name.
func csFileJSSel(name string) string {
	return `#changes-panel .file-edit[data-file$="/` + name + `"]`
}
