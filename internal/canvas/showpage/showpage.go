// Package showpage is the show_page canvas plugin: it opens a canvas in
// the calling chat on a page the agent names, says whether the page can be
// reached, and closes it. The page is either a web server the agent
// started on this machine (http or https on 127.0.0.1, localhost or
// [::1], nothing else: the host never fetches any other address), or a
// file in the chat's directories, which the host serves read-only
// (canvas.Files).
package showpage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/confine"
)

// The plugin's identity on its canvases.
const (
	ExtensionID   = "ahpd.show-page"
	ExtensionName = "Show page"
	CanvasID      = "page"
)

// Statuses the plugin says.
const (
	StatusRestarted = "The host restarted; show_page shows the page again"
	StatusNotServed = "The host does not serve files yet"
	// StatusNothingListens: nothing answered on the server's port.
	StatusNothingListens = "Not reachable: nothing listens there"
	statusFilePrefix     = "Serving "
)

// maxShown bounds the server urls remembered for canvases reopened after
// an unload; past it a reopened canvas asks to be shown again.
const maxShown = 1 << 14

// probeWait bounds how long show_page waits for a starting server.
const probeWait = 3 * time.Second

// Request is one show_page call.
type Request struct {
	// Chat is the calling chat; Dirs are its directories (local paths).
	Chat string
	Dirs []string
	// Exactly one of URL (a loopback http(s) server) and Path (a file of
	// the chat's directories, relative to its first directory, absolute,
	// or a file: URI).
	URL, Path string
	// Title and Status are shown on the canvas; a Status left out is what
	// the plugin found.
	Title, Status string
	// Canvas, when set, is a canvas of this chat to show the page on
	// instead of opening a new one.
	Canvas string
}

// Pages is the plugin.
type Pages struct {
	board canvas.Board
	files *canvas.Files
	// base is the daemon's own http origin ("http://127.0.0.1:port"), ""
	// until it listens.
	base  func() string
	probe *http.Client

	mu sync.Mutex
	// shown are the server urls this process put on its canvases: a
	// canvas reopened after an unload shows its url again, one reopened
	// after a restart does not (AHP-1.0.md §9: never reused from stored
	// state).
	shown map[string]string
}

// New returns the plugin, drawing through board and serving files with
// files under base().
func New(board canvas.Board, files *canvas.Files, base func() string) *Pages {
	return &Pages{board: board, files: files, base: base, probe: loopbackClient(), shown: make(map[string]string)}
}

var _ canvas.Plugin = (*Pages)(nil)

// ExtensionID is the plugin's extension id.
func (p *Pages) ExtensionID() string { return ExtensionID }

// source is what a canvas's chat keeps for the plugin.
type source struct {
	Kind string `json:"kind"` // "server" | "file"
	// Root and Entry: the folder served and the page in it (file).
	Root  string `json:"root,omitempty"`
	Entry string `json:"entry,omitempty"`
}

// Shown is what show_page tells the agent.
type Shown struct {
	Canvas string
	Status string
}

// Show opens (or, with Request.Canvas, redraws) a canvas on the page.
func (p *Pages) Show(ctx context.Context, r Request) (Shown, error) {
	if (r.URL == "") == (r.Path == "") {
		return Shown{}, errors.New("name exactly one of url (a server you started on 127.0.0.1, localhost or [::1]) and path (a file in this chat's directories)")
	}
	uri := r.Canvas
	if uri != "" {
		chat, _, ok := canvas.Parse(uri)
		if !ok || chat != r.Chat {
			return Shown{}, fmt.Errorf("%s is not a canvas of this chat", uri)
		}
	} else {
		uri = canvas.NewURI(r.Chat)
	}
	st := ahp.CanvasState{InstanceID: instanceOf(uri), ExtensionID: ExtensionID, ExtensionName: ExtensionName, CanvasID: CanvasID, Title: r.Title}
	var src source
	if r.URL != "" {
		u, err := LoopbackURL(r.URL)
		if err != nil {
			return Shown{}, err
		}
		src.Kind = "server"
		var up bool
		st.Status, up = p.check(ctx, u.String())
		if up {
			// The url is there only while the page can be reached
			// (AHP-1.0.md §9); the agent shows it again once it can.
			st.URL = u.String()
		}
		if st.Title == "" {
			st.Title = u.Host
		}
	} else {
		root, entry, err := resolvePage(r.Path, r.Dirs)
		if err != nil {
			return Shown{}, err
		}
		src = source{Kind: "file", Root: root, Entry: entry}
		st.URL, st.Status = p.serveFile(uri, src)
		if st.Title == "" {
			st.Title = filepath.Base(filepath.FromSlash(entry))
		}
	}
	found := st.Status
	if r.Status != "" {
		st.Status = r.Status
	}
	data, _ := json.Marshal(src)
	d := canvas.Drawing{State: st, Data: data}
	var err error
	if r.Canvas != "" {
		err = p.board.Draw(ctx, uri, d)
	} else {
		err = p.board.Open(ctx, uri, d)
	}
	if err != nil {
		if src.Kind == "file" {
			// Serve already replaced the canvas's token: nothing shows
			// the new one, and a canvas gone must not stay served.
			p.files.Revoke(uri)
		}
		return Shown{}, err
	}
	p.mu.Lock()
	if st.URL != "" && src.Kind == "server" && len(p.shown) < maxShown {
		p.shown[uri] = st.URL
	} else {
		delete(p.shown, uri)
	}
	p.mu.Unlock()
	return Shown{Canvas: uri, Status: found}, nil
}

// Close closes a canvas of chat.
func (p *Pages) Close(ctx context.Context, chat, uri string) error {
	if c, _, ok := canvas.Parse(uri); !ok || c != chat {
		return fmt.Errorf("%s is not a canvas of this chat", uri)
	}
	return p.board.Close(ctx, uri)
}

// Revive shows a stored canvas again: a file canvas on a url of this
// process, a server canvas on its url only when this process showed it.
func (p *Pages) Revive(_ string, c canvas.Stored) ahp.CanvasState {
	st := c.State
	st.URL = ""
	var src source
	_ = json.Unmarshal(c.Data, &src)
	switch src.Kind {
	case "file":
		var status string
		if st.URL, status = p.serveFile(c.URI, src); st.URL == "" {
			st.Status = status
		}
	default:
		p.mu.Lock()
		u, ok := p.shown[c.URI]
		p.mu.Unlock()
		if ok {
			st.URL = u
		} else {
			st.Status = StatusRestarted
		}
	}
	return st
}

// Released stops serving a canvas's files; a canvas closed for good is
// forgotten.
func (p *Pages) Released(c canvas.Stored, closed bool) {
	p.files.Revoke(c.URI)
	if closed {
		p.mu.Lock()
		delete(p.shown, c.URI)
		p.mu.Unlock()
	}
}

// serveFile serves a file canvas and returns its url and status.
func (p *Pages) serveFile(uri string, src source) (string, string) {
	base := ""
	if p.base != nil {
		base = p.base()
	}
	if base == "" {
		return "", StatusNotServed
	}
	path, err := p.files.Serve(uri, src.Root, src.Entry)
	if err != nil {
		return "", "Not served: " + err.Error()
	}
	return base + path, statusFilePrefix + src.Entry
}

func instanceOf(uri string) string {
	_, id, _ := canvas.Parse(uri)
	return id
}

// LoopbackURL accepts only an http or https url on 127.0.0.1, localhost
// or [::1], with no credentials in it.
func LoopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url: only http and https are shown, not %q", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("url: credentials in the url are refused")
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1":
	default:
		return nil, fmt.Errorf("url: only a server on this machine (127.0.0.1, localhost or [::1]) is shown, not %q", u.Hostname())
	}
	u.Fragment = ""
	return u, nil
}

// check asks the server for the page, waiting a little for one still
// starting, and says what it found and whether the page can be reached.
// Only loopback is ever dialed.
func (p *Pages) check(ctx context.Context, page string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
		if err != nil {
			return "Not reachable: " + err.Error(), false
		}
		res, err := p.probe.Do(req)
		if err == nil {
			res.Body.Close()
			return fmt.Sprintf("Serving (HTTP %d)", res.StatusCode), true
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			if ctx.Err() != nil {
				return "Not reachable: no answer", false
			}
			return "Not reachable", false
		}
		select {
		case <-ctx.Done():
			return StatusNothingListens, false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// loopbackClient dials loopback addresses only, through no proxy, and
// follows no redirect: a server on this machine cannot send the host
// elsewhere.
func loopbackClient() *http.Client {
	dialer := &net.Dialer{Timeout: time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("show_page dials loopback only, not %s", host)
		}
		return nil
	}}
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, MaxIdleConns: 1, IdleConnTimeout: time.Second, DisableKeepAlives: true, ResponseHeaderTimeout: probeWait},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: probeWait,
	}
}

// resolvePage finds the page a path names in the chat's directories: a
// relative path against each directory in turn, an absolute one (or a
// file: URI) as it is; either way the file it really is (symlinks
// followed) must lie inside them. A folder is its index.html.
func resolvePage(p string, dirs []string) (root, entry string, err error) {
	if len(dirs) == 0 {
		return "", "", errors.New("path: this chat has no directories to serve a file from")
	}
	if strings.HasPrefix(p, "file:") {
		local, perr := ahp.LocalPath(p)
		if perr != nil {
			return "", "", fmt.Errorf("path: %w", perr)
		}
		p = local
	}
	candidates := []string{p}
	if !filepath.IsAbs(p) {
		candidates = candidates[:0]
		for _, d := range dirs {
			candidates = append(candidates, filepath.Join(d, p))
		}
	}
	var real string
	err = errors.New("path: not found in this chat's directories")
	for _, c := range candidates {
		if real, err = confine.Resolve(c, dirs); err == nil {
			break
		}
	}
	if err != nil {
		if errors.Is(err, confine.ErrOutside) {
			return "", "", fmt.Errorf("path: %s is outside this chat's directories", p)
		}
		return "", "", fmt.Errorf("path: %s is not a file of this chat's directories", p)
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", "", fmt.Errorf("path: %s: %w", p, err)
	}
	if info.IsDir() {
		real, err = confine.Resolve(filepath.Join(real, "index.html"), dirs)
		if err != nil {
			return "", "", fmt.Errorf("path: the folder %s has no index.html of its own", p)
		}
		if info, err = os.Stat(real); err != nil {
			return "", "", fmt.Errorf("path: %s: %w", p, err)
		}
	}
	if !info.Mode().IsRegular() {
		return "", "", fmt.Errorf("path: %s is not a file", p)
	}
	return filepath.Dir(real), filepath.Base(real), nil
}
