package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

// AddChat stores a new chat of this session and announces it
// (session/chatAdded); the first chat becomes the default.
func (s *Session) AddChat(ctx context.Context, rec store.ChatRecord) error {
	var aerr error
	err := s.call(ctx, func() { aerr = s.addChat(ctx, rec) })
	if err != nil {
		return err
	}
	return aerr
}

func (s *Session) addChat(ctx context.Context, rec store.ChatRecord) error {
	s.snapshotTitleOntoDefault()
	rec.Session = s.uri
	rec.Position = len(s.state.Chats)
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = s.cfg.Env.Now()
	}
	if rec.ModifiedAt.IsZero() {
		rec.ModifiedAt = rec.CreatedAt
	}
	if rec.Title == "" {
		rec.Title = chat.DefaultTitle
	}
	// The chat is durable before anybody hears of it.
	if err := s.cfg.Env.Store.PutChat(ctx, rec); err != nil {
		return fmt.Errorf("add chat %s: %w", rec.URI, err)
	}
	s.chats[rec.URI] = &chatEntry{record: rec}
	if s.cfg.OnChatIndex != nil {
		s.cfg.OnChatIndex(rec.URI, true)
	}
	s.apply(ahp.SessionChatAdded{Summary: summaryOfRecord(rec)}, nil)
	if s.state.DefaultChat == "" {
		s.apply(ahp.SessionDefaultChatChanged{DefaultChat: rec.URI}, nil)
	}
	return nil
}

// DefaultChat is the chat the session's defaultChat names.
func (s *Session) DefaultChat(ctx context.Context) (string, error) {
	var uri string
	err := s.call(ctx, func() { uri = s.state.DefaultChat })
	return uri, err
}

// DisposeChat closes one chat. The default chat, and a chat this session
// does not hold, are not closed: removed is false and nothing changes
// (C-FIRST-13, 14, C-CMD-08, 09).
func (s *Session) DisposeChat(ctx context.Context, uri string) (removed bool, err error) {
	var actor *chat.Chat
	var rec store.ChatRecord
	cerr := s.call(ctx, func() {
		e, ok := s.chats[uri]
		if !ok || uri == s.state.DefaultChat {
			return
		}
		removed = true
		actor, rec = e.actor, e.record
		delete(s.chats, uri)
		s.disposing++
	})
	if cerr != nil || !removed {
		return false, cerr
	}
	deleteConv := s.cfg.ClosedChats == store.ClosedDelete
	if actor != nil {
		if err := actor.Close(ctx, deleteConv); err != nil && err != chat.ErrClosed {
			s.log.Warn("close chat", "chat", uri, "err", err)
		}
	} else if deleteConv && s.cfg.Agent != nil && s.cfg.Agent.Capabilities().Delete && rec.ConversationID != "" {
		dirs, _ := ahp.LocalPaths(s.chatDirectories(rec))
		if err := s.cfg.Agent.Delete(ctx, rec.ConversationID, dirs); err != nil {
			s.log.Warn("delete closed chat's conversation", "chat", uri, "err", err)
		}
	}
	mode := s.cfg.ClosedChats
	if err := s.cfg.Env.Store.CloseChat(ctx, uri, mode); err != nil {
		s.tell("the end of disposing "+uri, func() { s.disposing-- })
		return true, fmt.Errorf("dispose chat %s: %w", uri, err)
	}
	// Once queued, the step runs even if ctx ends first.
	err = s.call(ctx, func() {
		s.disposing--
		if s.cfg.OnChatIndex != nil {
			s.cfg.OnChatIndex(uri, false)
		}
		s.apply(ahp.SessionChatRemoved{Chat: uri}, nil)
		s.cfg.Env.Bus.DropChannel(uri)
		s.renumber()
	})
	return true, err
}

// renumber stores the chats' positions after a removal.
func (s *Session) renumber() {
	for i, cs := range s.state.Chats {
		e := s.chats[cs.Resource]
		if e == nil || e.record.Position == i {
			continue
		}
		e.record.Position = i
		rec := e.record
		s.cfg.Env.Store.Enqueue(func(ctx context.Context, st *store.Store) error { return st.PutChat(ctx, rec) })
	}
}

// ChatRecords lists the chats the session holds, in catalogue order.
func (s *Session) ChatRecords(ctx context.Context) ([]store.ChatRecord, error) {
	var out []store.ChatRecord
	err := s.call(ctx, func() {
		for _, cs := range s.state.Chats {
			if e := s.chats[cs.Resource]; e != nil {
				out = append(out, e.record)
			}
		}
	})
	return out, err
}

// Directories are the session's working directories.
func (s *Session) Directories(ctx context.Context) ([]string, error) {
	var out []string
	err := s.call(ctx, func() { out = slices.Clone(s.state.WorkingDirectories) })
	return out, err
}

func originJSON(o *ahp.ChatOrigin) json.RawMessage {
	if o == nil {
		return nil
	}
	b, _ := json.Marshal(o)
	return b
}

// CreateChat makes a chat of this session: a new conversation, a fork of
// another chat at a turn, or a side chat opened on a turn (C-FROM-01..18).
// A chat naming a directory the session does not have is refused
// (C-FIRST-26, 27).
func (s *Session) CreateChat(ctx context.Context, p ahp.CreateChatParams, cl chat.Client) error {
	var cerr error
	err := s.call(ctx, func() { cerr = s.createChat(ctx, p) })
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if p.InitialMessage != nil {
		c, err := s.Chat(ctx, p.Chat)
		if err != nil {
			return err
		}
		start := ahp.ChatTurnStarted{TurnID: uuid.NewString(), StartedAt: iso(s.cfg.Env.Now()), Message: *p.InitialMessage}
		return c.Dispatch(cl, 0, start)
	}
	return nil
}

func (s *Session) createChat(ctx context.Context, p ahp.CreateChatParams) error {
	if _, dup := s.chats[p.Chat]; dup {
		// Creating a chat the session holds is idempotent: the client
		// that asked again gets the chat there is (VS Code's
		// multiChatSuite).
		return nil
	}
	now := s.cfg.Env.Now()
	rec := store.ChatRecord{
		URI:            p.Chat,
		Title:          chat.DefaultTitle,
		ConversationID: uuid.NewString(),
		CreatedAt:      now,
		ModifiedAt:     now,
		Origin:         originJSON(&ahp.ChatOrigin{Kind: "user"}),
	}
	var copied []store.TurnRecord
	if p.Source != nil {
		// C-FROM-02: the kind is read first; it decides what the rest means.
		kind := p.Source.EffectiveKind()
		if kind != ahp.SourceFork && kind != ahp.SourceSideChat {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.source.kind: unknown kind %q", kind)
		}
		if p.Source.Chat == "" || p.Source.TurnID == "" {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.source: chat and turnId are required")
		}
		src, err := s.openChat(ctx, p.Source.Chat)
		if err != nil {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.source.chat: %s is not a chat of %s", p.Source.Chat, s.uri)
		}
		srcRec := s.chats[p.Source.Chat].record
		rec.WorkingDirectories = srcRec.WorkingDirectories
		switch kind {
		case ahp.SourceFork:
			rec.Origin = originJSON(&ahp.ChatOrigin{Kind: ahp.SourceFork, Chat: p.Source.Chat, TurnID: p.Source.TurnID})
			fs, err := src.ForkAt(ctx, p.Chat, p.Source.TurnID)
			if errors.Is(err, chat.ErrNoSuchTurn) {
				// C-CMD-06: a fork copies an existing turn; one the source
				// does not hold is refused, as a side chat's is, rather
				// than made empty claiming a turn it never had (VS Code's
				// multiChatSuite makes it empty: CHATS.md wins,
				// docs/CONFORMANCE.md).
				return ahp.Errorf(ahp.ErrInvalidParams, "params.source.turnId: %q is not a turn of %s", p.Source.TurnID, p.Source.Chat)
			}
			if err != nil {
				return err
			}
			copied = fs.Turns
			rec.Meta = chat.RecordMeta{PendingOpen: &chat.PendingOpen{Source: fs.ConversationID, Point: fs.Point}}.Raw()
			rec.Title = srcRec.Title
		case ahp.SourceSideChat:
			text, err := src.SideChatContext(ctx, p.Source.TurnID, p.Source.Selection)
			if err != nil {
				return err
			}
			o := &ahp.ChatOrigin{Kind: ahp.SourceSideChat, Chat: p.Source.Chat, TurnID: p.Source.TurnID}
			if sel := p.Source.Selection; sel != nil && sel.Text != "" {
				// C-FROM-15, 16: kept only when it has text.
				o.Selection = sel
			}
			rec.Origin = originJSON(o)
			rec.Meta = chat.RecordMeta{FirstPromptContext: text}.Raw()
		}
	}
	if p.Source == nil || p.Source.EffectiveKind() != ahp.SourceFork {
		if len(p.WorkingDirectories) > 0 {
			dirs, err := s.subsetOfSession(p.WorkingDirectories)
			if err != nil {
				return err
			}
			rec.WorkingDirectories = dirs
		}
	}
	// A closed chat the store keeps under this URI (closedChats "hidden")
	// is superseded: the new chat starts with nothing of it (VS Code's
	// "recreating a disposed peer chat starts empty").
	if old, found, err := s.cfg.Env.Store.Chat(ctx, rec.URI); err != nil {
		return fmt.Errorf("create chat %s: %w", rec.URI, err)
	} else if found {
		if old.Session != s.uri || !old.Closed {
			return fmt.Errorf("%w: chat %s", ahp.ErrAlreadyExists, rec.URI)
		}
		s.log.Info("a new chat replaces the closed chat of its URI", "chat", rec.URI)
		if err := s.cfg.Env.Store.DeleteChat(ctx, rec.URI); err != nil {
			return fmt.Errorf("create chat %s: %w", rec.URI, err)
		}
	}
	// The copied turns are stored with the chat, before anybody hears of it.
	rec.Session = s.uri
	if err := s.cfg.Env.Store.PutChat(ctx, withPosition(rec, len(s.state.Chats))); err != nil {
		return fmt.Errorf("create chat %s: %w", rec.URI, err)
	}
	for _, t := range copied {
		if err := s.cfg.Env.Store.PutTurn(ctx, t); err != nil {
			return fmt.Errorf("copy turn into %s: %w", rec.URI, err)
		}
	}
	return s.addChat(ctx, rec)
}

func withPosition(r store.ChatRecord, pos int) store.ChatRecord { r.Position = pos; return r }

// subsetOfSession checks that every directory is one of the session's and
// returns them as the session spells them.
func (s *Session) subsetOfSession(dirs []string) ([]string, error) {
	have := make(map[string]string, len(s.state.WorkingDirectories))
	for _, d := range s.state.WorkingDirectories {
		if p, err := ahp.LocalPath(d); err == nil {
			have[p] = d
		}
	}
	out := make([]string, 0, len(dirs))
	for i, d := range dirs {
		p, err := ahp.LocalPath(d)
		if err != nil {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectories[%d]: %v", i, err)
		}
		sd, ok := have[p]
		if !ok {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.workingDirectories[%d]: %s is not a working directory of session %s; a chat works in its session's working directories or a subset of them", i, d, s.uri)
		}
		out = append(out, sd)
	}
	return out, nil
}

// OpenChats counts this session's chats whose actor is loaded.
func (s *Session) OpenChats(ctx context.Context) (int, error) {
	n := 0
	err := s.call(ctx, func() {
		for _, e := range s.chats {
			if e.actor != nil && !e.actor.Ending() {
				n++
			}
		}
	})
	return n, err
}

// snapshotTitleOntoDefault gives a one-chat session's default chat the
// session's title as the first peer chat arrives: until then the session's
// title is the chat's, and from then on each chat keeps its own (VS Code's
// multiChatSuite, "first peer chat snapshots the session title onto the
// default chat").
func (s *Session) snapshotTitleOntoDefault() {
	if len(s.state.Chats) != 1 || s.state.Chats[0].Resource != s.state.DefaultChat {
		return
	}
	e := s.chats[s.state.DefaultChat]
	if e == nil || s.state.Title == "" || s.state.Chats[0].Title == s.state.Title {
		return
	}
	e.record.Title = s.state.Title
	if e.actor != nil {
		// Stored by the chat before its summary reaches this session's
		// mailbox, ahead of the new chat's request's reply.
		ctx, cancel := context.WithTimeout(context.Background(), store.CommitWait)
		defer cancel()
		if err := e.actor.Rename(ctx, s.state.Title); err != nil {
			s.log.Error("snapshot the session title onto the default chat", "chat", e.record.URI, "err", err)
		}
	} else {
		s.renameStoredChat(e, s.state.Title)
	}
}
