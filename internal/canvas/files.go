package canvas

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ahpd/ahpd/internal/confine"
)

// FilesPath is where the daemon serves file canvases, on its own port:
// FilesPath<token>/<file>, one random token per canvas.
const FilesPath = "/ahp-canvas-files/"

// Bounds of what Files holds and sends.
const (
	// MaxFileBytes is the largest file a canvas is sent.
	MaxFileBytes = 16 << 20
	// maxServed bounds the canvases served at once.
	maxServed = 1 << 14
)

// ErrTooMany refuses a canvas past maxServed.
var ErrTooMany = errors.New("too many file canvases are served")

// Files serves file canvases read-only: each canvas's folder (a folder of
// its chat's directories) under a random token of its own, which is the
// whole credential, so the url is never logged. A token lives while the
// canvas does in this process; a restart mints a new one.
type Files struct {
	mu       sync.Mutex
	byToken  map[string]served
	byCanvas map[string]string // canvas URI → token
}

type served struct {
	canvas string
	// root is the folder served (symlinks resolved); entry is the page in
	// it, slash-separated.
	root, entry string
}

// NewFiles returns an empty file server.
func NewFiles() *Files {
	return &Files{byToken: make(map[string]served), byCanvas: make(map[string]string)}
}

// Serve serves root (an absolute folder, symlinks resolved, already
// confined to the chat's directories) for canvas, and returns the path of
// entry (a file in root) under FilesPath. Serving the same root and entry
// again keeps the token; anything else mints a new one.
func (f *Files) Serve(canvas, root, entry string) (string, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("serve canvas files: %s is not an absolute folder", root)
	}
	entry = path.Clean("/" + filepath.ToSlash(entry))[1:]
	f.mu.Lock()
	defer f.mu.Unlock()
	if tok, ok := f.byCanvas[canvas]; ok {
		if s := f.byToken[tok]; s.root == root && s.entry == entry {
			return pathOf(tok, entry), nil
		}
		delete(f.byToken, tok)
		delete(f.byCanvas, canvas)
	}
	if len(f.byToken) >= maxServed {
		return "", ErrTooMany
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mint canvas token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	f.byToken[tok] = served{canvas: canvas, root: root, entry: entry}
	f.byCanvas[canvas] = tok
	return pathOf(tok, entry), nil
}

func pathOf(tok, entry string) string {
	return FilesPath + tok + "/" + (&url.URL{Path: entry}).EscapedPath()
}

// Revoke stops serving canvas's files: its url answers 404 from then on.
func (f *Files) Revoke(canvas string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tok, ok := f.byCanvas[canvas]; ok {
		delete(f.byToken, tok)
		delete(f.byCanvas, canvas)
	}
}

// Served counts the canvases served now.
func (f *Files) Served() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byToken)
}

// ServeHTTP answers GET and HEAD of FilesPath<token>/<file>: a regular
// file of the token's folder, read through internal/confine (no "..", no
// symlink out of it), at most MaxFileBytes. Everything else is 404, the
// same answer an unknown token gets, so a probe learns nothing.
func (f *Files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "canvas files are read-only", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, FilesPath)
	if !ok {
		http.NotFound(w, r)
		return
	}
	tok, rel, _ := strings.Cut(rest, "/")
	f.mu.Lock()
	s, known := f.byToken[tok]
	f.mu.Unlock()
	if !known || strings.ContainsRune(rel, 0) || strings.Contains(rel, "\\") {
		http.NotFound(w, r)
		return
	}
	// Cleaned as an absolute path, so no ".." climbs above the folder;
	// confine then refuses a symlink that leads out of it.
	rel = path.Clean("/" + rel)[1:]
	if rel == "" {
		rel = s.entry
	}
	full := filepath.Join(s.root, filepath.FromSlash(rel))
	file, err := confine.Open(full, []string{s.root})
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer file.Close()
	info, err := file.Stat()
	if err == nil && info.IsDir() {
		// A folder is its index page, never a listing.
		file.Close()
		full = filepath.Join(full, "index.html")
		if file, err = confine.Open(full, []string{s.root}); err != nil {
			http.NotFound(w, r)
			return
		}
		defer file.Close()
		info, err = file.Stat()
	}
	if err != nil || !info.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	if info.Size() > MaxFileBytes {
		http.Error(w, fmt.Sprintf("a canvas file is at most %d bytes", MaxFileBytes), http.StatusRequestEntityTooLarge)
		return
	}
	h := w.Header()
	if ct := mime.TypeByExtension(filepath.Ext(full)); ct != "" {
		h.Set("Content-Type", ct)
	} else {
		h.Set("Content-Type", "application/octet-stream")
	}
	h.Set("Content-Length", fmt.Sprint(info.Size()))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	// The token is in the url: a page's own links must not carry it away.
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, io.LimitReader(file, MaxFileBytes))
}
