// Package console is ahpd's web console: a single-page AHP client, served
// by the daemon itself from files embedded at build time (no CDN, no
// runtime download, no build step: plain JavaScript modules), so a browser
// pointed at http://HOST:PORT/ watches and drives every session.
//
// The page speaks the same websocket protocol as any client. It presents
// a connection token as a websocket subprotocol (internal/rpc
// subprotocol.go), never in a URL, and keeps it in sessionStorage. Its
// origin is the daemon's own, which the door lets in (internal/rpc
// door.go).
//
// Markdown is rendered with marked and sanitised with DOMPurify
// (static/markdown.js), terminals are drawn by xterm.js
// (static/terminal.js), all vendored in static/vendor from the versions
// pinned in web/package-lock.json: the page loads no code from elsewhere.
package console

//go:generate sh web/vendor.sh

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// Prefix is where the page's assets are served; "/" serves the page.
const Prefix = "/console/"

// Serves reports whether a GET of urlPath is the console's: "/" or an
// asset under Prefix.
func Serves(urlPath string) bool {
	return urlPath == "/" || strings.HasPrefix(urlPath, Prefix)
}

// Handler serves the page at "/" and its assets under Prefix, with headers
// that keep it to its own origin: a content security policy allowing only
// its own scripts, styles and websocket; no referrer; no framing.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic("console: embedded files: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := "index.html"
		if r.URL.Path != "/" {
			name = strings.TrimPrefix(path.Clean(r.URL.Path), Prefix)
		}
		if !fs.ValidPath(name) || name == "." {
			http.NotFound(w, r)
			return
		}
		body, err := fs.ReadFile(static, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		nonce := ""
		if name == "index.html" {
			nonce = styleNonce()
			body = bytes.ReplaceAll(body, []byte(noncePlaceholder), []byte(nonce))
		}
		h := w.Header()
		if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
			h.Set("Content-Type", ct)
		}
		if path.Ext(name) == ".js" {
			h.Set("Content-Type", "text/javascript; charset=utf-8")
		}
		h.Set("Content-Security-Policy", csp(r.Host, nonce))
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

// noncePlaceholder is where index.html carries its style nonce (on its
// stylesheet link, where static/terminal.js reads it).
const noncePlaceholder = "AHPD-STYLE-NONCE"

// styleNonce is a fresh nonce for one page load's <style> elements.
// xterm.js draws a terminal with <style> elements it writes at run time
// (its theme, its cell size); only those the page's own script stamps
// with this nonce apply, so a <style> that markup smuggled in does not.
func styleNonce() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// csp is the page's content security policy. connect-src names the
// websocket of the request's own host besides 'self', for browsers whose
// 'self' does not cover ws: (CSP level 2). A nonce, when given, admits the
// <style> elements that carry it (styleNonce); style attributes stay
// refused.
func csp(host, nonce string) string {
	connect := "'self'"
	if host != "" && !strings.ContainsAny(host, " ;,'\"") {
		connect += " ws://" + host + " wss://" + host
	}
	style := "'self'"
	if nonce != "" {
		style += " 'nonce-" + nonce + "'"
	}
	return "default-src 'none'; script-src 'self'; style-src " + style + "; img-src 'self' data:; connect-src " + connect +
		"; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
}
