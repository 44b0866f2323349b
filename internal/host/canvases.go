package host

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/canvas/showpage"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/hosttools"
)

// canvasKit is the host's canvases: the plugins (the chats' Keeper), the
// file server of file canvases and the show_page plugin. Each canvas is
// its chat actor's; the host only routes to it (the canvas.Board).
type canvasKit struct {
	plugins  *canvas.Plugins
	files    *canvas.Files
	pages    *showpage.Pages
	sessions *sessionDesk
}

// newCanvasKit makes the canvases; origin is the daemon's own http origin
// ("" until it listens).
func newCanvasKit(sessions *sessionDesk, origin func() string) *canvasKit {
	k := &canvasKit{files: canvas.NewFiles(), sessions: sessions}
	k.pages = showpage.New(board{sessions}, k.files, origin)
	k.plugins = canvas.NewPlugins(k.pages)
	return k
}

// CanvasFilesHandler serves file canvases (mount it at canvas.FilesPath on
// the daemon's port).
// It waits for the catalogue (Host.restore) as the lanes do.
func (h *Host) CanvasFilesHandler() http.Handler { return h.afterRestore(h.canv.files) }

// board is the host as plugins draw through it: each call goes to the
// actor of the canvas's chat.
type board struct{ sessions *sessionDesk }

var _ canvas.Board = board{}

func (b board) Open(ctx context.Context, uri string, d canvas.Drawing) error {
	chatURI, _, ok := canvas.Parse(uri)
	if !ok {
		return fmt.Errorf("%s is not a canvas channel", uri)
	}
	return b.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error { return c.OpenCanvas(ctx, uri, d) })
}

func (b board) Draw(ctx context.Context, uri string, d canvas.Drawing) error {
	chatURI, _, ok := canvas.Parse(uri)
	if !ok {
		return canvas.ErrGone(uri)
	}
	return b.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error { return c.DrawCanvas(ctx, uri, d) })
}

func (b board) Close(ctx context.Context, uri string) error {
	chatURI, _, ok := canvas.Parse(uri)
	if !ok {
		return canvas.ErrGone(uri)
	}
	return b.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error { return c.CloseCanvas(ctx, uri) })
}

// subscribe answers a subscription to a canvas channel: the canvas
// of a chat this host holds, read under the chat's grant, by a connection
// at 0.10.0 or later (C-CANV-12). A canvas whose chat is gone answers
// -32008 "Canvas is no longer available" (C-CANV-09).
func (k *canvasKit) subscribe(ctx context.Context, cl *client, uri string) (ahp.Snapshot, error) {
	if !cl.Knows(ahp.ActionCanvasStateChanged) {
		return ahp.Snapshot{}, ahp.Errorf(ahp.ErrInvalidRequest, "canvas channels need protocol 0.10.0 or later; this connection speaks %s", cl.negotiated())
	}
	chatURI, _, ok := canvas.Parse(uri)
	if !ok {
		return ahp.Snapshot{}, canvas.ErrGone(uri)
	}
	if _, _, err := k.sessions.resolveChat(ctx, chatURI); err != nil {
		return ahp.Snapshot{}, canvas.ErrGone(uri)
	}
	var snap ahp.Snapshot
	err := k.sessions.onChat(ctx, chatURI, func(c *chat.Chat) (err error) {
		snap, err = c.SubscribeCanvas(ctx, cl, uri)
		return err
	})
	return snap, err
}

// exists reports whether a canvas channel is one a chat here holds.
func (k *canvasKit) exists(ctx context.Context, uri string) bool {
	chatURI, _, ok := canvas.Parse(uri)
	if !ok {
		return false
	}
	if _, _, err := k.sessions.resolveChat(ctx, chatURI); err != nil {
		return false
	}
	var has bool
	err := k.sessions.onChat(ctx, chatURI, func(c *chat.Chat) (err error) {
		has, err = c.HasCanvas(ctx, uri)
		return err
	})
	return err == nil && has
}

// ShowPage is the show_page tool: a canvas of the calling chat on a page
// the agent names.
func (h *Host) ShowPage(ctx context.Context, caller hosttools.Caller, p hosttools.Page) (string, error) {
	return h.canv.showPage(ctx, caller, p)
}

// ClosePage is the close_page tool: it closes a canvas of the calling chat.
func (h *Host) ClosePage(ctx context.Context, caller hosttools.Caller, uri string) error {
	return h.canv.pages.Close(ctx, caller.Chat, uri)
}

func (k *canvasKit) showPage(ctx context.Context, caller hosttools.Caller, p hosttools.Page) (string, error) {
	var dirs []string
	if err := k.sessions.onChat(ctx, caller.Chat, func(c *chat.Chat) (err error) {
		dirs, err = c.Directories(ctx)
		return err
	}); err != nil {
		return "", err
	}
	shown, err := k.pages.Show(ctx, showpage.Request{
		Chat: caller.Chat, Dirs: dirs, URL: p.URL, Path: p.Path, Title: p.Title, Status: p.Status, Canvas: p.Canvas,
	})
	if err != nil {
		return "", err
	}
	verb := "Opened"
	if p.Canvas != "" {
		verb = "Showed the page again on"
	}
	return fmt.Sprintf("%s canvas %s: %s", verb, shown.Canvas, shown.Status), nil
}
