// Package canvas is the in-process plugin API of canvases (CHATS.md
// "Canvases", AHP-1.0.md §9): a page a plugin draws on a chat, served on
// an ahp-canvas: channel of its own.
//
// A plugin opens, draws on and closes canvases through a Board (the host,
// which hands each call to the chat actor that owns the canvas); no client
// action does (C-CANV-10, 11). The chat keeps its canvases in its record,
// so they outlive an unload and a restart; when it opens again it asks the
// canvas's plugin, through a Keeper, for the state to show, because a
// source url is never reused from stored state after a restart. Files
// serves a file canvas's folder read-only under a capability token.
package canvas

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/google/uuid"
)

// Scheme is the canvas channels' URI scheme.
const Scheme = "ahp-canvas:"

// URI is the channel of canvas id of chat: ahp-canvas:/<base64url(chat)>/<id>
// (C-CANV-04).
func URI(chat, id string) string {
	return Scheme + "/" + base64.RawURLEncoding.EncodeToString([]byte(chat)) + "/" + id
}

// NewURI mints the channel of a new canvas of chat.
func NewURI(chat string) string { return URI(chat, uuid.NewString()) }

// Is reports whether uri names a canvas channel (well formed or not).
func Is(uri string) bool { return strings.HasPrefix(uri, Scheme) }

// Parse returns the chat a canvas channel belongs to and the canvas's id.
// Anything but ahp-canvas:/<base64url(chat URI)>/<uuid> is not a canvas.
func Parse(uri string) (chat, id string, ok bool) {
	rest, found := strings.CutPrefix(uri, Scheme+"/")
	if !found {
		return "", "", false
	}
	enc, id, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !ahp.IsChatURI(string(raw)) {
		return "", "", false
	}
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return "", "", false
	}
	return string(raw), id, true
}

// ErrGone answers a canvas whose chat was closed, removed or moved, or
// that its plugin closed: -32008 "Canvas is no longer available: <uri>"
// (C-CANV-09).
func ErrGone(uri string) error {
	return &ahp.Error{Code: ahp.CodeNotFound, Message: "Canvas is no longer available: " + uri}
}

// Drawing is what a plugin puts on a canvas: its whole state, and data of
// the plugin's own that the chat keeps with it (what the plugin needs to
// draw it again after a restart).
type Drawing struct {
	State ahp.CanvasState `json:"state"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// Stored is a canvas as its chat keeps it. State.URL is never stored.
type Stored struct {
	URI string `json:"uri"`
	Drawing
}

// Board is what plugins open, draw on and close canvases through: the
// host. Each call is carried out by the chat actor that owns the canvas,
// stored before it is said.
type Board interface {
	// Open opens the canvas uri (NewURI of the chat it is drawn on) with d.
	Open(ctx context.Context, uri string, d Drawing) error
	// Draw replaces the canvas's whole state (canvas/stateChanged).
	Draw(ctx context.Context, uri string, d Drawing) error
	// Close closes the canvas; its chat no longer lists it.
	Close(ctx context.Context, uri string) error
}

// Plugin draws the canvases of one extension.
type Plugin interface {
	// ExtensionID is CanvasState.extensionId of the plugin's canvases.
	ExtensionID() string
	// Revive is the state to show for a stored canvas when its chat opens
	// again (after an unload or a restart of the host).
	Revive(chat string, c Stored) ahp.CanvasState
	// Released says the chat no longer holds the canvas loaded: it
	// unloaded (closed false; Revive follows when it opens again), or the
	// canvas or its chat closed for good (closed true). What the plugin
	// serves for the canvas stops.
	Released(c Stored, closed bool)
}

// Keeper is what a chat asks about the canvases it keeps.
type Keeper interface {
	Revive(chat string, c Stored) ahp.CanvasState
	Released(c Stored, closed bool)
}

// Plugins is the host's plugins by extension id; it is the chats' Keeper.
type Plugins struct {
	mu   sync.RWMutex
	byID map[string]Plugin
}

// NewPlugins returns a set of plugins.
func NewPlugins(ps ...Plugin) *Plugins {
	s := &Plugins{byID: make(map[string]Plugin)}
	for _, p := range ps {
		s.byID[p.ExtensionID()] = p
	}
	return s
}

// Add adds a plugin; a second of the same extension id is refused.
func (s *Plugins) Add(p Plugin) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[p.ExtensionID()]; dup {
		return fmt.Errorf("canvas plugin %s: %w", p.ExtensionID(), errors.ErrUnsupported)
	}
	s.byID[p.ExtensionID()] = p
	return nil
}

func (s *Plugins) plugin(id string) Plugin {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

// UnavailableStatus is the status of a canvas whose plugin is not loaded.
const UnavailableStatus = "Its plugin is not loaded here"

// Revive asks the canvas's plugin for the state to show; a canvas whose
// plugin is gone is shown without a source.
func (s *Plugins) Revive(chat string, c Stored) ahp.CanvasState {
	if p := s.plugin(c.State.ExtensionID); p != nil {
		return p.Revive(chat, c)
	}
	st := c.State
	st.URL = ""
	st.Status = UnavailableStatus
	return st
}

// Released tells the canvas's plugin its chat let it go.
func (s *Plugins) Released(c Stored, closed bool) {
	if p := s.plugin(c.State.ExtensionID); p != nil {
		p.Released(c, closed)
	}
}
