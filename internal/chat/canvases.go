package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/reduce"
)

// Canvases (CHATS.md "Canvases"): the chat actor owns its canvases. It
// keeps them in its record's meta (RecordMeta.Canvases, never a url), lists
// them in ChatState.canvases in the order they were opened, absent when
// none, and holds each canvas channel's CanvasState. Every change is
// stored before it is said (durable.go). Plugins reach them through the
// host's canvas.Board; no client action does.

// maxCanvases bounds the canvases one chat holds open.
const maxCanvases = 64

// StatusClosed is the last state a canvas channel is told when its canvas
// or its chat closes: no url, since nothing serves it any more.
const StatusClosed = "Closed"

// canvases are the chat's canvases in opening order, as the actor holds
// them. It is part of the chat actor and runs only on the actor's
// goroutine.
type canvases struct {
	c    *Chat
	list []liveCanvas
}

// liveCanvas is one canvas as the actor holds it: as stored, and the state
// its channel shows (with its url).
type liveCanvas struct {
	canvas.Stored
	shown ahp.CanvasState
}

func stripURL(d canvas.Drawing) canvas.Drawing {
	d.State.URL = ""
	return d
}

// restore reads the stored canvases into st and the actor, asking
// each one's plugin what to show (a url is never reused from the store).
func (cv *canvases) restore(st *ahp.ChatState) {
	c := cv.c
	for _, s := range ParseRecordMeta(c.record.Meta).Canvases {
		shown := s.State
		shown.URL = ""
		if c.cfg.Canvases != nil {
			shown = c.cfg.Canvases.Revive(c.cfg.URI, s)
		}
		cv.list = append(cv.list, liveCanvas{Stored: s, shown: shown})
		st.Canvases = append(st.Canvases, ahp.CanvasReference{Resource: s.URI})
	}
}

func (cv *canvases) index(uri string) int {
	return slices.IndexFunc(cv.list, func(l liveCanvas) bool { return l.URI == uri })
}

// store puts the canvases into the record's meta (committed by
// whoever says the change).
func (cv *canvases) store() {
	c := cv.c
	meta := ParseRecordMeta(c.record.Meta)
	meta.Canvases = nil
	for _, l := range cv.list {
		meta.Canvases = append(meta.Canvases, l.Stored)
	}
	c.record.Meta = meta.Raw()
}

// say stores the list and says it: chat/canvasesChanged, committed
// with the record before it is published (durable.go).
func (cv *canvases) say() {
	c := cv.c
	cv.store()
	var refs []ahp.CanvasReference
	for _, l := range cv.list {
		refs = append(refs, ahp.CanvasReference{Resource: l.URI})
	}
	c.apply(ahp.ChatCanvasesChanged{Canvases: refs}, nil)
}

// OpenCanvas opens canvas uri (canvas.NewURI of this chat) with d; the
// chat lists it last (C-CANV-01, 02).
func (c *Chat) OpenCanvas(ctx context.Context, uri string, d canvas.Drawing) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.canvases.open(uri, d) })
	if err != nil {
		return err
	}
	return ferr
}

// open is OpenCanvas on the actor.
func (cv *canvases) open(uri string, d canvas.Drawing) error {
	c := cv.c
	if chat, _, ok := canvas.Parse(uri); !ok || chat != c.cfg.URI {
		return ahp.Errorf(ahp.ErrInvalidParams, "%s is not a canvas channel of %s", uri, c.cfg.URI)
	}
	if cv.index(uri) >= 0 {
		return ahp.Errorf(ahp.ErrAlreadyExists, "canvas %s is open", uri)
	}
	if len(cv.list) >= maxCanvases {
		return fmt.Errorf("chat %s holds %d canvases, the most it may", c.cfg.URI, maxCanvases)
	}
	cv.list = append(cv.list, liveCanvas{Stored: canvas.Stored{URI: uri, Drawing: stripURL(d)}, shown: d.State})
	cv.say()
	return nil
}

// DrawCanvas replaces a canvas's state: what its chat keeps is stored
// first, then canvas/stateChanged is said on its channel.
func (c *Chat) DrawCanvas(ctx context.Context, uri string, d canvas.Drawing) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.canvases.draw(uri, d) })
	if err != nil {
		return err
	}
	return ferr
}

// draw is DrawCanvas on the actor.
func (cv *canvases) draw(uri string, d canvas.Drawing) error {
	c := cv.c
	i := cv.index(uri)
	if i < 0 {
		return canvas.ErrGone(uri)
	}
	l := &cv.list[i]
	kept := stripURL(d)
	if !sameDrawing(l.Drawing, kept) {
		l.Drawing = kept
		cv.store()
		c.durable.commit("canvas "+uri, c.durable.recordOp())
	}
	a := ahp.CanvasStateChanged{Canvas: d.State}
	reduce.Canvas(&l.shown, a)
	c.cfg.Env.Bus.Publish(uri, a, nil)
	return nil
}

func sameDrawing(a, b canvas.Drawing) bool {
	return a.State == b.State && string(a.Data) == string(b.Data)
}

// CloseCanvas closes a canvas: the chat no longer lists it, its channel is
// told it has no url any more, and then it has no subscribers.
func (c *Chat) CloseCanvas(ctx context.Context, uri string) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.canvases.close(uri) })
	if err != nil {
		return err
	}
	return ferr
}

// close is CloseCanvas on the actor.
func (cv *canvases) close(uri string) error {
	i := cv.index(uri)
	if i < 0 {
		return canvas.ErrGone(uri)
	}
	l := cv.list[i]
	cv.list = slices.Delete(cv.list, i, i+1)
	cv.say()
	cv.end(l)
	return nil
}

// end says a canvas's last state, drops its channel and lets its
// plugin know.
func (cv *canvases) end(l liveCanvas) {
	c := cv.c
	last := l.shown
	last.URL = ""
	last.Status = StatusClosed
	c.cfg.Env.Bus.Publish(l.URI, ahp.CanvasStateChanged{Canvas: last}, nil)
	c.cfg.Env.Bus.DropChannel(l.URI)
	if c.cfg.Canvases != nil {
		c.cfg.Canvases.Released(l.Stored, true)
	}
}

// endAll ends every canvas with the chat (C-CANV-06, 07): it is
// closing. What the record keeps is left as it is: a chat closed for good
// is gone with its record, and one the host closes to stop comes back
// with its canvases.
func (cv *canvases) endAll() {
	for _, l := range cv.list {
		cv.end(l)
	}
	cv.list = nil
}

// release lets the plugins stop serving the canvases of a chat
// that unloads; they are revived when it opens again.
func (cv *canvases) release() {
	c := cv.c
	if c.cfg.Canvases == nil {
		return
	}
	for _, l := range cv.list {
		c.cfg.Canvases.Released(l.Stored, false)
	}
}

// watched: somebody watches one of the chat's canvases, which
// keeps the chat loaded, as a watcher of the chat does.
func (cv *canvases) watched() bool {
	c := cv.c
	for _, l := range cv.list {
		if c.cfg.Env.Bus.Subscribers(l.URI) > 0 {
			return true
		}
	}
	return false
}

// SubscribeCanvas returns a canvas's snapshot and adds sub to its channel
// in the same step. A canvas this chat does not hold answers -32008
// "Canvas is no longer available" (C-CANV-09).
func (c *Chat) SubscribeCanvas(ctx context.Context, sub bus.Subscriber, uri string) (ahp.Snapshot, error) {
	var snap ahp.Snapshot
	var ferr error
	err := c.call(ctx, func() { snap, ferr = c.canvases.subscribe(sub, uri) })
	if err != nil {
		return ahp.Snapshot{}, err
	}
	return snap, ferr
}

// subscribe is SubscribeCanvas on the actor.
func (cv *canvases) subscribe(sub bus.Subscriber, uri string) (ahp.Snapshot, error) {
	c := cv.c
	i := cv.index(uri)
	if i < 0 {
		return ahp.Snapshot{}, canvas.ErrGone(uri)
	}
	raw, err := json.Marshal(cv.list[i].shown)
	if err != nil {
		return ahp.Snapshot{}, fmt.Errorf("snapshot canvas %s: %w", uri, err)
	}
	seq := c.cfg.Env.Bus.Subscribe(sub, uri)
	return ahp.Snapshot{Resource: uri, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// HasCanvas reports whether the chat holds canvas uri.
func (c *Chat) HasCanvas(ctx context.Context, uri string) (bool, error) {
	var has bool
	err := c.call(ctx, func() { has = c.canvases.index(uri) >= 0 })
	return has, err
}
