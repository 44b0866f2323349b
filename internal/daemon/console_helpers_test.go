package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The web console's browser tests drive Debian's Chromium, headless; they
// run in make check.
const chromiumHint = "chromium is not installed: apt-get update && apt-get install -y chromium (make check does this when apt is available), or set AHPD_CHROMIUM"

func chromiumPath(t *testing.T) string {
	t.Helper()
	testutil.RequireCheck(t, "drives Chromium")
	for _, p := range []string{os.Getenv("AHPD_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	t.Skip(chromiumHint)
	return ""
}

// browser is one headless Chromium; each page is a tab of it.
type browser struct {
	t     *testing.T
	first context.Context
	shots string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(func(string, ...any) {}))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, first: ctx}
	b.shots = os.Getenv("ARTIFACTS_DIR")
	if b.shots == "" {
		dir, err := os.MkdirTemp("", "ahpd-console-shots-")
		if err != nil {
			t.Fatal(err)
		}
		b.shots = dir
	} else {
		b.shots = filepath.Join(b.shots, "console")
		_ = os.MkdirAll(b.shots, 0o755)
	}
	t.Logf("console screenshots go to %s", b.shots)
	return b
}

// page is one tab, with the page's console output and uncaught errors in
// the test log.
type page struct {
	t      *testing.T
	name   string
	ctx    context.Context
	b      *browser
	mu     sync.Mutex
	errors []string
}

// bind makes pages report to t (a subtest) until the returned func runs.
func bind(t *testing.T, pages ...*page) func() {
	old := make([]*testing.T, len(pages))
	for i, p := range pages {
		old[i], p.t = p.t, t
	}
	return func() {
		for i, p := range pages {
			p.t = old[i]
		}
	}
}

func (b *browser) page(name string) *page {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.first)
	b.t.Cleanup(cancel)
	p := &page{t: b.t, name: name, ctx: ctx, b: b}
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open tab %s: %v", name, err)
	}
	_ = chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			b.t.Logf("[%s console.%s] %s", name, ev.Type, strings.Join(parts, " "))
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			p.mu.Lock()
			p.errors = append(p.errors, msg)
			p.mu.Unlock()
			b.t.Logf("[%s uncaught] %s", name, msg)
		}
	})
	return p
}

// do runs actions; a failure fails the test.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %s: %v", p.name, what, err)
	}
}

// wait polls a JavaScript expression until it is truthy.
func (p *page) wait(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 25*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		dump, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`JSON.stringify({pending: document.getElementById('pending')?.innerText, turns: [...document.querySelectorAll('.turn')].map((n) => n.dataset.state + ': ' + n.innerText.slice(0, 300)), conn: document.getElementById('conn')?.textContent, error: document.getElementById('compose-error')?.textContent})`))
		p.t.Fatalf("%s: waiting for %s (%s): %v\npage: %s", p.name, what, expr, err, dump)
	}
}

func evalAs[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("%s: eval %s: %v", p.name, expr, err)
	}
	return v
}

func (p *page) str(expr string) string { return evalAs[string](p, expr) }

func (p *page) click(sel string) {
	p.t.Helper()
	// The page redraws as actions arrive (a session's status is one more
	// since the session follows its chats): a node found and replaced
	// before the mouse reaches it is looked up again, as a person's second
	// try would be. Anything else fails at once.
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		if try == 5 || !strings.Contains(err.Error(), "Could not find node") {
			p.t.Fatalf("%s: click %s: %v", p.name, sel, err)
		}
	}
}

// typeText focuses the message box and types text as keystrokes.
func (p *page) typeText(sel, text string) {
	p.t.Helper()
	p.do("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

func (p *page) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s", path)
}

func (p *page) noErrors() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errors) > 0 {
		p.t.Errorf("%s: uncaught page errors: %q", p.name, p.errors)
	}
}

// cutProxy forwards TCP connections to target and can cut every one it
// holds at once, as a network drop does; it keeps accepting new ones.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) url() string { return fmt.Sprintf("http://%s/", p.ln.Addr()) }

// retarget sends the connections accepted from now on to target.
func (p *cutProxy) retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// cut closes every connection open now.
func (p *cutProxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	return n / 2
}

// jsq quotes s as a JavaScript string literal.
func jsq(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// newForeignPage serves html from another origin (its own 127.0.0.1 port).
func newForeignPage(t *testing.T, html string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, html)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// a11yJS lists what the page gets wrong for a keyboard or screen reader
// person: visible form fields without a label, buttons and tabs without a
// name, and visible text whose contrast with its background is under 4.5:1
// (WCAG AA for normal text).
const a11yJS = `(() => {
  const bad = [];
  const visible = (n) => n.getClientRects().length > 0 && getComputedStyle(n).visibility !== 'hidden';
  for (const f of document.querySelectorAll('input, select, textarea')) {
    if (!visible(f) || f.type === 'hidden') continue;
    const named = (f.id && document.querySelector('label[for="' + f.id + '"]')) || f.closest('label') || f.getAttribute('aria-label');
    if (!named) bad.push('unlabelled field #' + f.id);
  }
  for (const b of document.querySelectorAll('button, [role=tab], a[href]')) {
    if (!visible(b)) continue;
    if (!(b.getAttribute('aria-label') || b.textContent.trim())) bad.push('nameless ' + b.tagName + ' ' + b.className);
    if (b.tabIndex < 0 && b.getAttribute('role') !== 'tab') bad.push('unfocusable ' + b.textContent.trim());
  }
  const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const bgOf = (n) => {
    for (; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const n = t.parentElement;
    if (!t.textContent.trim() || seen.has(n) || !visible(n)) continue;
    seen.add(n);
    const st = getComputedStyle(n);
    if (parseFloat(st.opacity) < 1 || n.closest('button:disabled')) continue;
    const fg = rgb(st.color).slice(0, 3), bg = bgOf(n);
    const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < 4.5) bad.push('contrast ' + ratio.toFixed(2) + ' for "' + t.textContent.trim().slice(0, 30) + '"');
  }
  return bad.join('; ');
})()`

// accessible fails the test with what a11yJS finds.
func (p *page) accessible(view string) {
	p.t.Helper()
	if bad := p.str(a11yJS); bad != "" {
		p.t.Errorf("%s: %s: %s", p.name, view, bad)
	}
}
