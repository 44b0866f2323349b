package showpage

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ahpd/ahpd/internal/canvas"
)

// TestLoopbackURL: only http(s) on 127.0.0.1, localhost or [::1] is
// shown; every other address is refused before anything is dialed.
func TestLoopbackURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:5173/", true},
		{"https://localhost:8443/app?x=1", true},
		{"http://[::1]:3000/", true},
		{"http://localhost/", true},
		{"http://127.0.0.2:80/", false},
		{"http://10.0.0.1:8080/", false},
		{"http://example.com/", false},
		{"http://localhost.example.com/", false},
		{"http://127.0.0.1.nip.io/", false},
		{"http://0.0.0.0:3000/", false},
		{"http://[::ffff:127.0.0.1]:3000/", false},
		{"http://user:pw@localhost:3000/", false},
		{"file:///etc/passwd", false},
		{"ftp://127.0.0.1/", false},
		{"javascript:alert(1)", false},
		{"//localhost:3000/", false},
		{"http://2130706433/", false},
	} {
		_, err := LoopbackURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("LoopbackURL(%q): %v, want ok %v", tc.url, err, tc.ok)
		}
	}
}

// TestProbeDialsLoopbackOnly: the probe's dialer refuses a non-loopback
// address even if a name resolved to one, and follows no redirect.
func TestProbeDialsLoopbackOnly(t *testing.T) {
	c := loopbackClient()
	tr := c.Transport.(*http.Transport)
	if tr.Proxy != nil {
		t.Fatal("the probe goes through a proxy")
	}
	if _, err := tr.DialContext(context.Background(), "tcp", "192.0.2.1:80"); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("dialing a non-loopback address: %v", err)
	}
	// A redirect to another address is not followed: its status is the
	// answer.
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.0.2.1/", http.StatusFound)
	}))
	defer redirect.Close()
	p := &Pages{probe: c}
	if status, up := p.check(context.Background(), redirect.URL); !up || status != "Serving (HTTP 302)" {
		t.Fatalf("redirect: %q %v", status, up)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	if status, up := p.check(context.Background(), closed); up || status != StatusNothingListens {
		t.Fatalf("nothing listening: %q %v", status, up)
	}
}

// TestResolvePage: a page is a file of the chat's directories; "..", an
// absolute path outside them and a symlink out are refused.
func TestResolvePage(t *testing.T) {
	dir, other, outside := t.TempDir(), t.TempDir(), t.TempDir()
	for p, body := range map[string]string{
		filepath.Join(dir, "docs", "index.html"): "d",
		filepath.Join(dir, "report.html"):        "r",
		filepath.Join(other, "b.html"):           "b",
		filepath.Join(outside, "secret.html"):    "s",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.html"), filepath.Join(dir, "link.html")); err != nil {
		t.Fatal(err)
	}
	dirs := []string{dir, other}
	realDir, _ := filepath.EvalSymlinks(dir)
	realOther, _ := filepath.EvalSymlinks(other)
	for _, tc := range []struct {
		path, root, entry string
	}{
		{"report.html", realDir, "report.html"},
		{"docs", filepath.Join(realDir, "docs"), "index.html"},
		{"docs/../report.html", realDir, "report.html"},
		{"b.html", realOther, "b.html"},
		{filepath.Join(dir, "report.html"), realDir, "report.html"},
		{"file://" + filepath.Join(dir, "report.html"), realDir, "report.html"},
		{"../" + filepath.Base(outside) + "/secret.html", "", ""},
		{filepath.Join(outside, "secret.html"), "", ""},
		{"link.html", "", ""},
		{"missing.html", "", ""},
		{"/etc/passwd", "", ""},
		{".", "", ""}, // the directory itself has no index.html
	} {
		root, entry, err := resolvePage(tc.path, dirs)
		if tc.root == "" {
			if err == nil {
				t.Errorf("resolvePage(%q) = %q %q, want a refusal", tc.path, root, entry)
			}
			continue
		}
		if err != nil || root != tc.root || entry != tc.entry {
			t.Errorf("resolvePage(%q) = %q %q %v, want %q %q", tc.path, root, entry, err, tc.root, tc.entry)
		}
	}
	if _, _, err := resolvePage("report.html", nil); err == nil {
		t.Error("a chat with no directories served a file")
	}
}

// fakeBoard records what the plugin drew.
type fakeBoard struct {
	mu     sync.Mutex
	open   map[string]canvas.Drawing
	order  []string
	closed []string
}

func (b *fakeBoard) Open(_ context.Context, uri string, d canvas.Drawing) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open[uri] = d
	b.order = append(b.order, uri)
	return nil
}

func (b *fakeBoard) Draw(_ context.Context, uri string, d canvas.Drawing) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.open[uri]; !ok {
		return canvas.ErrGone(uri)
	}
	b.open[uri] = d
	return nil
}

func (b *fakeBoard) Close(_ context.Context, uri string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.open[uri]; !ok {
		return canvas.ErrGone(uri)
	}
	delete(b.open, uri)
	b.closed = append(b.closed, uri)
	return nil
}

// TestShowPage: a server page opens a canvas with its url and what the
// probe found; a file page gets a url of the host's own; showing again
// redraws; another chat's canvas is refused; a canvas revived after a
// restart never reuses a stored url (AHP-1.0.md §9).
func TestShowPage(t *testing.T) {
	dev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("dev")) }))
	defer dev.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte("p"), 0o600); err != nil {
		t.Fatal(err)
	}
	board := &fakeBoard{open: map[string]canvas.Drawing{}}
	files := canvas.NewFiles()
	p := New(board, files, func() string { return "http://127.0.0.1:9" })
	ctx := context.Background()
	const chat = "ahp-chat:/c1"

	shown, err := p.Show(ctx, Request{Chat: chat, Dirs: []string{dir}, URL: dev.URL + "/", Title: "Dev"})
	if err != nil {
		t.Fatal(err)
	}
	d := board.open[shown.Canvas]
	if d.State.URL != dev.URL+"/" || d.State.Status != "Serving (HTTP 200)" || d.State.Title != "Dev" ||
		d.State.ExtensionID != ExtensionID || d.State.CanvasID != CanvasID || d.State.InstanceID == "" {
		t.Fatalf("server canvas %+v", d.State)
	}
	if c, _, _ := canvas.Parse(shown.Canvas); c != chat {
		t.Fatalf("canvas %s is not of %s", shown.Canvas, chat)
	}

	file, err := p.Show(ctx, Request{Chat: chat, Dirs: []string{dir}, Path: "page.html"})
	if err != nil {
		t.Fatal(err)
	}
	fd := board.open[file.Canvas]
	if !strings.HasPrefix(fd.State.URL, "http://127.0.0.1:9"+canvas.FilesPath) || !strings.HasSuffix(fd.State.URL, "/page.html") || fd.State.Title != "page.html" || files.Served() != 1 {
		t.Fatalf("file canvas %+v", fd.State)
	}
	var src source
	if err := json.Unmarshal(fd.Data, &src); err != nil || src.Kind != "file" || src.Entry != "page.html" {
		t.Fatalf("file canvas data %s", fd.Data)
	}

	// Shown again with a status of the agent's: the same canvas, redrawn.
	again, err := p.Show(ctx, Request{Chat: chat, Dirs: []string{dir}, URL: dev.URL + "/", Status: "Build done", Canvas: shown.Canvas})
	if err != nil || again.Canvas != shown.Canvas || board.open[shown.Canvas].State.Status != "Build done" || len(board.order) != 2 {
		t.Fatalf("redraw: %+v %v, %+v", again, err, board.open[shown.Canvas].State)
	}
	if _, err := p.Show(ctx, Request{Chat: "ahp-chat:/other", Dirs: []string{dir}, URL: dev.URL, Canvas: shown.Canvas}); err == nil {
		t.Fatal("another chat drew on this chat's canvas")
	}
	if err := p.Close(ctx, "ahp-chat:/other", shown.Canvas); err == nil {
		t.Fatal("another chat closed this chat's canvas")
	}
	if _, err := p.Show(ctx, Request{Chat: chat, Dirs: []string{dir}, URL: "http://192.0.2.7:80/"}); err == nil {
		t.Fatal("a non-loopback url was shown")
	}
	if len(board.order) != 2 {
		t.Fatalf("a refused call opened a canvas: %v", board.order)
	}

	// Revived in this process (after an unload): the url is shown again.
	stored := canvas.Stored{URI: shown.Canvas, Drawing: board.open[shown.Canvas]}
	stored.State.URL = ""
	if st := p.Revive(chat, stored); st.URL != dev.URL+"/" {
		t.Fatalf("revived after an unload: %+v", st)
	}
	// Revived by a new process (a restart): a server url is not reused,
	// a file canvas gets a token of the new process.
	fresh := New(board, canvas.NewFiles(), func() string { return "http://127.0.0.1:10" })
	if st := fresh.Revive(chat, stored); st.URL != "" || st.Status != StatusRestarted {
		t.Fatalf("revived after a restart: %+v", st)
	}
	storedFile := canvas.Stored{URI: file.Canvas, Drawing: fd}
	storedFile.State.URL = ""
	st := fresh.Revive(chat, storedFile)
	if !strings.HasPrefix(st.URL, "http://127.0.0.1:10"+canvas.FilesPath) || st.URL == fd.State.URL {
		t.Fatalf("file canvas revived after a restart: %q (was %q)", st.URL, fd.State.URL)
	}

	// Drawing a file page on a canvas that is gone serves nothing.
	servedBefore := files.Served()
	if _, err := p.Show(ctx, Request{Chat: chat, Dirs: []string{dir}, Path: "page.html", Canvas: canvas.NewURI(chat)}); err == nil || files.Served() != servedBefore {
		t.Fatalf("a page on a canvas that is gone: %v, %d served (was %d)", err, files.Served(), servedBefore)
	}

	// Closed: the board closes it and its files are no longer served.
	if err := p.Close(ctx, chat, file.Canvas); err != nil {
		t.Fatal(err)
	}
	p.Released(storedFile, true)
	if files.Served() != 0 {
		t.Fatal("a closed file canvas is still served")
	}
	if err := p.Close(ctx, chat, file.Canvas); err == nil {
		t.Fatal("closing a closed canvas succeeded")
	}
}
