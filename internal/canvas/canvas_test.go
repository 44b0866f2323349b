package canvas

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestCanvasURI: a canvas channel is ahp-canvas:/<base64url(chat)>/<uuid>
// (C-CANV-04), and nothing else parses as one.
func TestCanvasURI(t *testing.T) {
	chat := "ahp-chat://5f1c/YWhwLXNlc3Npb246L3M="
	id := "0b9e1c52-7f3a-4c59-9a57-3f1e2f1c0d11"
	uri := URI(chat, id)
	if !strings.HasPrefix(uri, "ahp-canvas:/") || strings.ContainsAny(strings.TrimPrefix(uri, "ahp-canvas:/"), "+=:") {
		t.Fatalf("URI %q", uri)
	}
	gotChat, gotID, ok := Parse(uri)
	if !ok || gotChat != chat || gotID != id {
		t.Fatalf("Parse(%q) = %q %q %v", uri, gotChat, gotID, ok)
	}
	if c, _, ok := Parse(NewURI("ahp-chat:/c1")); !ok || c != "ahp-chat:/c1" {
		t.Fatalf("NewURI does not parse back: %q", c)
	}
	for _, bad := range []string{
		"ahp-canvas:/k1",
		"ahp-chat:/c1",
		URI("ahp-session:/s", id),   // not a chat
		URI(chat, "not-a-uuid"),     // not a uuid
		URI(chat, id) + "/more",     // trailing path
		"ahp-canvas:/!!!/" + id,     // not base64url
		"ahp-canvas://" + id + "/x", // no chat
	} {
		if _, _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	var e *ahp.Error
	if err := ErrGone(uri); !errors.As(err, &e) || e.Code != -32008 || err.Error() != "Canvas is no longer available: "+uri {
		t.Fatalf("ErrGone: %v", err)
	}
}

// TestPluginsRevive: a canvas whose plugin is not loaded comes back with
// no url, saying so.
func TestPluginsRevive(t *testing.T) {
	ps := NewPlugins()
	st := ps.Revive("ahp-chat:/c", Stored{URI: "u", Drawing: Drawing{State: ahp.CanvasState{ExtensionID: "gone", Title: "T", URL: "http://127.0.0.1:1/"}}})
	if st.URL != "" || st.Status != UnavailableStatus || st.Title != "T" {
		t.Fatalf("revived %+v", st)
	}
	ps.Released(Stored{}, true) // no plugin: nothing to do, no panic
}

// TestFilesConfined: a file canvas serves its folder read-only; "..",
// encoded dots, a symlink out of the folder, an absolute path, a revoked
// or unknown token, a write and an oversized file read nothing outside.
func TestFilesConfined(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	site := filepath.Join(root, "site")
	write(filepath.Join(site, "index.html"), "<h1>page</h1>")
	write(filepath.Join(site, "app.js"), "console.log(1)")
	write(filepath.Join(site, "sub", "index.html"), "sub page")
	write(filepath.Join(root, "secret.txt"), "SECRET-IN-CHAT-DIR")
	write(filepath.Join(outside, "passwd"), "SECRET-OUTSIDE")
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(site, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(site, "dir-out")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(site, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()

	f := NewFiles()
	const c1 = "ahp-canvas:/one"
	p, err := f.Serve(c1, site, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	get := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	tokDir := strings.TrimSuffix(p, "index.html")
	for _, tc := range []struct {
		name, path string
		code       int
		body       string
	}{
		{"the page", p, 200, "<h1>page</h1>"},
		{"a file beside it", tokDir + "app.js", 200, "console.log(1)"},
		{"the token alone is the page", strings.TrimSuffix(tokDir, "/"), 200, "<h1>page</h1>"},
		{"a folder is its index", tokDir + "sub/", 200, "sub page"},
		{"dot-dot", tokDir + "../secret.txt", 404, ""},
		{"encoded dot-dot", tokDir + "%2e%2e/secret.txt", 404, ""},
		{"encoded slash dot-dot", tokDir + "..%2fsecret.txt", 404, ""},
		{"deep dot-dot", tokDir + "sub/../../../../../../" + strings.TrimPrefix(outside, "/") + "/passwd", 404, ""},
		{"absolute path", tokDir + "/" + filepath.Join(outside, "passwd"), 404, ""},
		{"backslash", tokDir + "..%5csecret.txt", 404, ""},
		{"NUL", tokDir + "index.html%00", 404, ""},
		{"a symlink out", tokDir + "link-out", 404, ""},
		{"through a symlinked folder", tokDir + "dir-out/passwd", 404, ""},
		{"an unknown token", FilesPath + "nope/index.html", 404, ""},
		{"no token", FilesPath, 404, ""},
		{"too large", tokDir + "big.bin", 413, ""},
	} {
		code, body := get(http.MethodGet, tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) || strings.Contains(body, "SECRET") {
			t.Errorf("%s (%s): %d %q, want %d %q", tc.name, tc.path, code, body, tc.code, tc.body)
		}
	}
	if code, _ := get(http.MethodPost, p); code != http.StatusMethodNotAllowed {
		t.Errorf("a POST got %d", code)
	}
	if code, body := get(http.MethodHead, p); code != 200 || body != "" {
		t.Errorf("HEAD got %d %q", code, body)
	}
	// Serving the same page again keeps the token; another page mints one.
	if again, _ := f.Serve(c1, site, "index.html"); again != p {
		t.Fatalf("the same page got a new path %q", again)
	}
	other, _ := f.Serve(c1, site, "app.js")
	if other == p || strings.HasPrefix(other, tokDir) {
		t.Fatalf("another page kept the token: %q", other)
	}
	if code, _ := get(http.MethodGet, p); code != 404 {
		t.Fatalf("the replaced token still serves: %d", code)
	}
	f.Revoke(c1)
	if code, _ := get(http.MethodGet, other); code != 404 || f.Served() != 0 {
		t.Fatalf("a revoked canvas still serves: %d (%d served)", code, f.Served())
	}
	if _, err := f.Serve("ahp-canvas:/two", "relative/dir", "x"); err == nil {
		t.Fatal("a relative folder was served")
	}
}
