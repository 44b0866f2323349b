package session

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

// The session's worker-chat API (CHATS.md "Subagents"). A chat's actor asks
// for it only through the session's mailbox (Config.OpenWorker and
// Config.Relay of chat.Config): the session calls chat actors synchronously,
// so a chat that waited on its session could deadlock.

// workerConfig wires a chat's worker hooks before it opens: the URI its
// conversation's workers get, the way to open one and to reach another
// chat, and, for a worker chat, the root chat that runs it.
func (s *Session) workerConfig(cfg *chat.Config, rec store.ChatRecord) {
	root := s.rootChatOf(rec)
	defaultChat := s.state.DefaultChat
	session := s.uri
	cfg.WorkerURI = func(toolCallID string) string {
		return chat.MintWorkerURI(session, defaultChat, root, toolCallID)
	}
	cfg.OpenWorker = func(w chat.WorkerOpen) { s.tell("open worker "+w.URI, func() { s.openWorker(w) }) }
	cfg.Relay = func(from *chat.Chat, uri string, fn func(*chat.Chat)) {
		s.tell("relay to "+uri, func() { s.relay(from, uri, fn) })
	}
	if o := originOf(rec); o != nil && o.Kind == ahp.OriginTool && o.ToolCallID != "" {
		cfg.Worker = &chat.WorkerLink{Root: root, ToolCallID: o.ToolCallID}
	}
}

func originOf(rec store.ChatRecord) *ahp.ChatOrigin {
	if len(rec.Origin) == 0 {
		return nil
	}
	var o ahp.ChatOrigin
	if json.Unmarshal(rec.Origin, &o) != nil {
		return nil
	}
	return &o
}

// rootChatOf follows a worker chat's origins up to the chat whose backend
// conversation runs it; any other chat is its own root.
func (s *Session) rootChatOf(rec store.ChatRecord) string {
	uri := rec.URI
	for range len(s.chats) + 1 {
		o := originOf(rec)
		if o == nil || o.Kind != ahp.OriginTool || o.Chat == "" {
			return uri
		}
		e := s.chats[o.Chat]
		if e == nil {
			return o.Chat
		}
		uri, rec = o.Chat, e.record
	}
	return uri
}

// openWorker stores a worker chat with its origin, announces it
// (session/chatAdded) and opens its turn with the prompt the parent agent
// wrote (C-SUB-01, 07, 08, 16). A worker this session already records is
// opened again rather than added twice. Runs on the session's actor.
func (s *Session) openWorker(w chat.WorkerOpen) {
	ctx := context.Background()
	if _, known := s.chats[w.URI]; !known {
		now := s.cfg.Env.Now()
		rec := store.ChatRecord{
			URI:            w.URI,
			Title:          w.Title,
			ConversationID: uuid.NewString(),
			CreatedAt:      now,
			ModifiedAt:     now,
			Interactivity:  ahp.InteractivityReadOnly,
			Origin:         originJSON(&ahp.ChatOrigin{Kind: ahp.OriginTool, Chat: w.Parent, ToolCallID: w.ToolCallID}),
		}
		if err := s.addChat(ctx, rec); err != nil {
			s.log.Warn("add worker chat", "chat", w.URI, "err", err)
			return
		}
	}
	c, err := s.openChat(ctx, w.URI)
	if err != nil {
		s.log.Warn("open worker chat", "chat", w.URI, "err", err)
		return
	}
	if err := c.BeginWorker(w.Prompt); err != nil {
		s.log.Warn("begin worker turn", "chat", w.URI, "err", err)
	}
}

// relay runs fn on one of the session's chats, opening it when needed.
// Runs on the session's actor.
func (s *Session) relay(from *chat.Chat, uri string, fn func(*chat.Chat)) {
	c, err := s.openChat(context.Background(), uri)
	if err != nil {
		s.log.Debug("relay to a chat this session does not hold", "chat", uri, "err", err)
		c = nil
	} else if err := c.Post(fn); err != nil {
		s.log.Warn("relay to chat", "chat", uri, "err", err)
		c = nil
	}
	// After fn is posted: from may now post to c directly (chat.Relayed).
	if err := from.Relayed(uri, c); err != nil && !errors.Is(err, chat.ErrClosed) {
		s.log.Warn("acknowledge a relay", "chat", uri, "err", err)
	}
}
