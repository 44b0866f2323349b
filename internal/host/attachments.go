package host

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/rpc"
)

// resolveTimeout bounds how long the host waits for a chat's transcript
// when it resolves a chat attachment; one it cannot read in time gives the
// pointer without an excerpt.
const resolveTimeout = 5 * time.Second

// attacher reads what a client's message attaches before the chat actor
// gets it: the chats it points at (read from their actors) and the
// resources only the sending client holds (read through it).
type attacher struct {
	env      *env.Env
	log      *slog.Logger
	sessions *sessionDesk
	// files asks clients for their files: bounded in time and in the
	// requests a client holds unanswered (clientfs.go).
	files *clientFiles
}

// clientFor is who cl is to the chat actor for action a: the chat
// attachments of the message a carries (a turn or a pending message) are
// resolved here first, on the connection's goroutine, where reading
// another chat's state is a plain request to that chat's actor. A chat
// actor never reads another chat itself, so no two chats wait on each
// other (C-ATT-22..34).
func (at *attacher) clientFor(ctx context.Context, cl *client, a ahp.Action) chat.Client {
	cc := cl.chatClient()
	if m := messageOf(a); m != nil {
		cc.ChatAttachments = at.resolveChatAttachments(ctx, cl, m.Attachments)
		cc.ChatAttachments = append(cc.ChatAttachments, at.fetchAttachments(ctx, cl, m.Attachments)...)
	}
	return cc
}

// fetches reports whether a is a resource the host has no copy of and asks
// the sending client for (C-ATT-11): not a file: URI, not hinted over
// attachmentFetchLimitBytes.
func (at *attacher) fetches(a ahp.MessageAttachment) bool {
	return attach.Plan(a, attach.PlanOptions{CanFetch: true, FetchLimit: at.env.Attachments.FetchLimit}) == attach.Fetch
}

// fetchAttachments reads each resource the host has no copy of through
// the client that sent it, with a server→client resourceRead. One the
// client cannot give, or that is over attachmentFetchLimitBytes once read,
// is left as sent (C-ATT-14, 17); the client closing ends the wait at once.
func (at *attacher) fetchAttachments(ctx context.Context, cl *client, atts []ahp.MessageAttachment) []attach.Resolved {
	var out []attach.Resolved
	for i, a := range atts {
		if !at.fetches(a) {
			continue
		}
		data, contentType, err := at.readThroughClient(ctx, cl, string(a.URI))
		if err != nil {
			at.log.Info("attachment left as sent: the client did not give it", "conn", cl.conn.ID(), "uri", a.URI, "err", err)
			continue
		}
		if ct := a.ContentType; ct != "" {
			contentType = ct
		}
		out = append(out, attach.Resolved{Index: i, Fetched: true, Data: data, ContentType: contentType})
	}
	return out
}

// clientReadAnswer is a client's resourceRead answer (VS Code answers
// {data, encoding: "base64"}; "utf-8" text is taken too).
type clientReadAnswer struct {
	Data        string `json:"data"`
	Encoding    string `json:"encoding"`
	ContentType string `json:"contentType,omitempty"`
}

// readThroughClient asks the client for uri, bounded by the fetch limit,
// the client file requests' timeout and the requests a client may hold.
func (at *attacher) readThroughClient(ctx context.Context, cl *client, uri string) ([]byte, string, error) {
	limit := at.env.Attachments.FetchLimit
	maxAnswer := math.MaxInt
	if limit > 0 && limit < math.MaxInt/2 {
		maxAnswer = int(limit)*4/3 + 64<<10 // base64 and the envelope
	}
	var res clientReadAnswer
	file := clientFile{owner: cl, ClientFile: ahp.ClientFile{ClientID: cl.ClientID(), URI: uri}}
	if err := at.files.callBounded(ctx, file, "resourceRead", map[string]any{"uri": uri}, &res, maxAnswer); err != nil {
		return nil, "", err
	}
	var data []byte
	switch res.Encoding {
	case "base64", "":
		if limit > 0 && int64(base64.StdEncoding.DecodedLen(len(res.Data))) > limit+3 {
			return nil, "", fmt.Errorf("%s is over attachmentFetchLimitBytes (%d)", uri, limit)
		}
		var err error
		if data, err = base64.StdEncoding.DecodeString(res.Data); err != nil {
			return nil, "", fmt.Errorf("resourceRead answer: %w", err)
		}
	case "utf-8", "utf8":
		data = []byte(res.Data)
	default:
		return nil, "", fmt.Errorf("resourceRead answer: encoding %q", res.Encoding)
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, "", fmt.Errorf("%s is over attachmentFetchLimitBytes (%d)", uri, limit)
	}
	return data, res.ContentType, nil
}

// writeInline writes the bytes of the inline attachments of the message a
// carries before the action goes any further (C-ATT-07): each is decoded
// from the string the client sent straight into its file under the
// session's attachments folder (C-ATT-09), and the message names the file
// from then on (C-ATT-10, attach.Written). So the bytes are held once, as
// the frame's string and only until written: not by the chat's state, a
// queued or waiting message, what is published or what is stored.
//
// data is each attachment's string as the transport kept it out of the
// frame (rpc.AttachmentData); an attachment's Data is read when the
// transport left the string in the frame. Nothing is written for a client
// without the grant the action needs (the chat refuses the action), for a
// session the host does not hold, or with no attachments folder: the
// attachment then stays as sent, its string back in its Data, and the chat
// does with it what it always did. A write that fails leaves it so too
// (C-ATT-19, 20). It runs on the connection's read loop: a write takes the
// disk's time, never an actor's.
func (at *attacher) writeInline(cl *client, session string, a ahp.Action, data rpc.AttachmentData) ahp.Action {
	m := messageOf(a)
	if m == nil || len(m.Attachments) == 0 {
		return a
	}
	write := session != "" && at.env.Attachments.Dir != ""
	if g := ahp.GrantFor(a.ActionType()); g != "" && !cl.principal.Can(g) {
		write = false
	}
	w := attach.Writer{Root: at.env.Attachments.Dir}
	atts := slices.Clone(m.Attachments)
	for i := range atts {
		att, str := &atts[i], data[i]
		var src io.Reader
		switch {
		case !write || att.Type != ahp.AttachmentEmbeddedResource:
		case str != nil && str.Len() > 0:
			src = str.Reader()
		case str == nil && att.Data != "":
			src = strings.NewReader(att.Data)
		}
		if src != nil {
			path, size, err := w.WriteFrom(attach.SessionFolder(session), att.Label, attach.DecodeReader(src))
			if err == nil {
				*att = attach.Written(*att, path, size)
				continue
			}
			at.log.Warn("attachment not written at the door; left as sent", "conn", cl.conn.ID(), "label", att.Label, "err", err)
		}
		if str != nil {
			att.Data = str.String() // as sent
		}
	}
	m.Attachments = atts
	return withMessage(a, *m)
}

// withMessage is a with its message m (a turn or a pending message).
func withMessage(a ahp.Action, m ahp.Message) ahp.Action {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		a.Message = m
		return a
	case ahp.ChatPendingMessageSet:
		a.Message = m
		return a
	}
	return a
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
func (at *attacher) resolveChatAttachments(ctx context.Context, cl *client, atts []ahp.MessageAttachment) []attach.Resolved {
	var out []attach.Resolved
	for i, a := range atts {
		if a.Type != ahp.AttachmentChat {
			continue
		}
		ref := attach.Ref{Label: a.Label, Resource: a.Resource}
		st, running := at.sessions.chatState(ctx, a.Resource)
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

// carriesChat reports whether a's message attaches a chat, which
// the host resolves (reading that chat) before the action is handed on.
func (at *attacher) carriesChat(a ahp.Action) bool {
	m := messageOf(a)
	if m == nil {
		return false
	}
	for _, att := range m.Attachments {
		if att.Type == ahp.AttachmentChat || at.fetches(att) {
			// A chat to read, or a resource to read through the client
			// (C-ATT-11): the message waits in its chat's lane for it, so
			// the client's later actions keep their order.
			return true
		}
	}
	return false
}
