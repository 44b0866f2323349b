package host

import (
	"context"
	"fmt"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
)

// resolveTimeout bounds how long the host waits for a chat's transcript
// when it resolves a chat attachment; one it cannot read in time gives the
// pointer without an excerpt.
const resolveTimeout = 5 * time.Second

// clientFor is who cl is to the chat actor for action a: the chat
// attachments of the message a carries (a turn or a pending message) are
// resolved here first, on the connection's goroutine, where reading
// another chat's state is a plain request to that chat's actor. A chat
// actor never reads another chat itself, so no two chats wait on each
// other (C-ATT-22..34).
func (h *Host) clientFor(ctx context.Context, cl *client, a ahp.Action) chat.Client {
	cc := cl.chatClient()
	if m := messageOf(a); m != nil {
		cc.ChatAttachments = h.resolveChatAttachments(ctx, cl, m.Attachments)
	}
	return cc
}

// messageOf is the message a carries (a turn or a pending message), nil
// for any other action.
func messageOf(a ahp.Action) *ahp.Message {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		return &a.Message
	case ahp.ChatPendingMessageSet:
		return &a.Message
	}
	return nil
}

// resolveChatAttachments turns each chat attachment into the pointer the
// backend is handed (C-ATT-23..27). A chat this host is not running, and
// one the sender may not read, give the pointer without an excerpt
// (C-ATT-30, 31); only a pin nobody can honour is an error, which ends the
// turn (C-ATT-32, 33).
func (h *Host) resolveChatAttachments(ctx context.Context, cl *client, atts []ahp.MessageAttachment) []attach.Resolved {
	var out []attach.Resolved
	for i, a := range atts {
		if a.Type != ahp.AttachmentChat {
			continue
		}
		ref := attach.Ref{Label: a.Label, Resource: a.Resource}
		st, running := h.chatStateFor(ctx, a.Resource)
		ref.Running = running
		if running && cl.principal.Can(auth.ChatTurns) {
			excerpt, err := attach.ChatExcerpt(st, a.EndTurn)
			if err != nil {
				out = append(out, attach.Resolved{Index: i, Err: fmt.Errorf("attachment %q: %w", a.Label, err)})
				continue
			}
			ref.Excerpt = excerpt
		}
		out = append(out, attach.Resolved{Index: i, Representation: attach.Pointer(ref)})
	}
	return out
}

// chatStateFor reads the state of a chat this host runs: one its chat
// index holds. A chat the index does not hold is not running here.
func (h *Host) chatStateFor(ctx context.Context, uri string) (ahp.ChatState, bool) {
	h.sessionsMu.Lock()
	sessURI, ok := h.chatIndex[uri]
	s := h.sessions[sessURI]
	h.sessionsMu.Unlock()
	if !ok || s == nil {
		return ahp.ChatState{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var st ahp.ChatState
	for attempt := 0; attempt < 3; attempt++ {
		c, err := s.Chat(ctx, uri)
		if err != nil {
			h.log.Debug("chat attachment: chat not readable", "chat", uri, "err", err)
			return ahp.ChatState{}, false
		}
		st, err = c.State(ctx)
		if err == nil {
			return st, true
		}
		h.log.Debug("chat attachment: chat state", "chat", uri, "err", err)
	}
	return ahp.ChatState{}, false
}
