package console

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestHandler: "/" is the page and /console/<file> its assets, each with
// the headers that keep it to its own origin; anything else is not the
// console's, a path out of the assets is 404, and only GET and HEAD are
// answered.
func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		method, path string
		status       int
		contentType  string
		body         string
	}{
		{"GET", "/", 200, "text/html", "<title>ahpd console</title>"},
		{"HEAD", "/", 200, "text/html", ""},
		{"GET", "/console/app.js", 200, "text/javascript", "import { Connection"},
		{"GET", "/console/markdown.js", 200, "text/javascript", "from './vendor/purify.es.js'"},
		{"GET", "/console/vendor/marked.esm.js", 200, "text/javascript", "marked v"},
		{"GET", "/console/vendor/purify.es.js", 200, "text/javascript", "DOMPurify"},
		{"GET", "/console/style.css", 200, "text/css", ":root"},
		{"GET", "/console/", 404, "", ""},
		{"GET", "/console/nope.js", 404, "", ""},
		{"GET", "/console/../console.go", 404, "", ""},
		{"GET", "/console/%2e%2e/console.go", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:9187"+tt.path, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if tt.status != 200 {
				return
			}
			hd := rec.Header()
			if !strings.HasPrefix(hd.Get("Content-Type"), tt.contentType) {
				t.Errorf("Content-Type %q, want %s", hd.Get("Content-Type"), tt.contentType)
			}
			csp := hd.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self' ws://127.0.0.1:9187", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if hd.Get("Referrer-Policy") != "no-referrer" || hd.Get("X-Frame-Options") != "DENY" || hd.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", hd)
			}
			if !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("body lacks %q", tt.body)
			}
		})
	}
}

// TestServes: the console answers "/" and its asset prefix only, so the
// daemon's other plain paths keep their 426.
func TestServes(t *testing.T) {
	for path, want := range map[string]bool{"/": true, "/console/app.js": true, "/index.html": false, "/api": false, "/healthz": false, "/consolex": false} {
		if got := Serves(path); got != want {
			t.Errorf("Serves(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestCSPHostIsNotInjected: a Host header that would add a directive is
// left out of connect-src.
func TestCSPHostIsNotInjected(t *testing.T) {
	if got := csp("evil; script-src *", ""); strings.Contains(got, "evil") {
		t.Errorf("csp = %q", got)
	}
}

// TestNoHTMLParsingInThePage: the page's own scripts never hand a string
// to the HTML parser; the only HTML parsed is marked's output, inside
// DOMPurify (static/vendor, not read here), which returns sanitised nodes.
func TestNoHTMLParsingInThePage(t *testing.T) {
	entries, err := files.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".js") {
			continue
		}
		b, _ := files.ReadFile("static/" + e.Name())
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser", "createContextualFragment"} {
			if strings.Contains(string(b), sink) {
				t.Errorf("%s uses %s", e.Name(), sink)
			}
		}
	}
}

// TestVendoredModulesArePinned: the marked, DOMPurify and xterm.js the page loads are
// the versions web/package-lock.json pins (web/vendor.sh copies them), so
// a pin changed without re-vendoring, or a hand-edited copy of another
// version, fails here.
func TestVendoredModulesArePinned(t *testing.T) {
	raw, err := os.ReadFile("web/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ pkg, file, banner string }{
		{"marked", "static/vendor/marked.esm.js", " * marked v%s "},
		{"dompurify", "static/vendor/purify.es.js", "@license DOMPurify %s "},
		{"@xterm/xterm", "static/vendor/xterm.mjs", "// @xterm/xterm %s "},
	} {
		version := lock.Packages["node_modules/"+c.pkg].Version
		if version == "" {
			t.Fatalf("%s is not pinned in web/package-lock.json", c.pkg)
		}
		body, err := files.ReadFile(c.file)
		if err != nil {
			t.Fatalf("%s is not embedded: %v", c.file, err)
		}
		head := string(body[:min(len(body), 400)])
		if want := strings.Replace(c.banner, "%s", version, 1); !strings.Contains(head, want) {
			t.Errorf("%s does not begin with %q (the pinned %s): run make console-vendor", c.file, want, c.pkg)
		}
	}
}

// TestPageStyleNonce: each load of the page gets a fresh style nonce,
// named by its CSP and carried by its stylesheet link (where terminal.js
// stamps xterm.js's <style> elements with it); an asset's CSP admits no
// inline style at all.
func TestPageStyleNonce(t *testing.T) {
	h := Handler()
	load := func(path string) (csp, body string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:9187"+path, nil))
		return rec.Header().Get("Content-Security-Policy"), rec.Body.String()
	}
	nonceOf := func(csp string) string {
		_, after, ok := strings.Cut(csp, "'nonce-")
		if !ok {
			return ""
		}
		n, _, _ := strings.Cut(after, "'")
		return n
	}
	csp1, body1 := load("/")
	csp2, _ := load("/")
	n1, n2 := nonceOf(csp1), nonceOf(csp2)
	if len(n1) < 20 || n1 == n2 {
		t.Fatalf("nonces %q and %q: want a fresh long one per load", n1, n2)
	}
	if !strings.Contains(csp1, "style-src 'self' 'nonce-"+n1+"';") {
		t.Errorf("CSP %q does not admit the nonce in style-src", csp1)
	}
	if !strings.Contains(body1, `nonce="`+n1+`"`) || strings.Contains(body1, noncePlaceholder) {
		t.Errorf("the page does not carry its nonce in place of the placeholder")
	}
	if csp, _ := load("/console/app.js"); strings.Contains(csp, "nonce-") || !strings.Contains(csp, "style-src 'self';") {
		t.Errorf("an asset's CSP %q", csp)
	}
}
