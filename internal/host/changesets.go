package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
)

// The changeset channels (ahp-changeset:), invokeChangesetOperation and the
// contents a changeset's files point at (ahp-changeset-content:, read with
// resourceRead). Each belongs to a chat, whose actor keeps the record
// (internal/chat/changesets.go); reading needs the chat's read grant,
// keeping changeset:review and undoing changeset:undo.

const methodInvokeChangesetOperation = "invokeChangesetOperation"

// changesetDesk answers the changeset channels and commands; the chat
// actors keep the changesets.
type changesetDesk struct {
	env      *env.Env
	sessions *sessionDesk
	git      *gitDesk // a git session's changesets (gitchangesets.go)
}

// subscribe answers a subscription to a changeset channel.
func (d *changesetDesk) subscribe(ctx context.Context, cl *client, channel string) (ahp.Snapshot, error) {
	ch, ok := changeset.ParseChannel(channel)
	if !ok {
		return ahp.Snapshot{}, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
	}
	if !cl.principal.Can(auth.ChatTurns) {
		return ahp.Snapshot{}, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "reading %s needs the grant %s", channel, auth.ChatTurns), map[string]any{"grant": auth.ChatTurns})
	}
	var snap ahp.Snapshot
	err := d.sessions.onChat(ctx, ch.Chat, func(c *chat.Chat) (err error) {
		snap, err = c.SubscribeChangeset(ctx, cl, channel, ch)
		return err
	})
	return snap, err
}

// exists says whether a changeset channel's chat exists, for
// reconnect.
func (d *changesetDesk) exists(ctx context.Context, channel string) bool {
	ch, ok := changeset.ParseChannel(channel)
	if !ok {
		return false
	}
	_, _, err := d.sessions.resolveChat(ctx, ch.Chat)
	return err == nil
}

type invokeChangesetParams struct {
	Channel     string                 `json:"channel"`
	OperationID string                 `json:"operationId"`
	Target      *chat.ChangesetTarget  `json:"target"`
	Meta        map[string]interface{} `json:"_meta,omitempty"`
}

// request answers invokeChangesetOperation; handled is false for
// any other method.
func (d *changesetDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (res any, handled bool, err error) {
	if method != methodInvokeChangesetOperation {
		return nil, false, nil
	}
	var p invokeChangesetParams
	if err := decodeParams(params, &p); err != nil {
		return nil, true, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, true, err
	}
	if p.OperationID == "" {
		return nil, true, ahp.Errorf(ahp.ErrInvalidParams, "params.operationId: required")
	}
	if sc, ok := changeset.ParseSessionChannel(p.Channel); ok {
		res, err := d.git.invoke(ctx, cl, p, sc)
		return res, true, err
	}
	ch, ok := changeset.ParseChannel(p.Channel)
	if !ok {
		return nil, true, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, p.Channel)
	}
	grant := auth.ChangesetUndo
	if p.OperationID == chat.OpKeep {
		grant = auth.ChangesetReview
	}
	for _, g := range []string{auth.ChatTurns, grant} {
		if !cl.principal.Can(g) {
			return nil, true, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "%s %s needs the grant %s", method, p.OperationID, g), map[string]any{"grant": g})
		}
	}
	var msg string
	err = d.sessions.onChat(ctx, ch.Chat, func(c *chat.Chat) (err error) {
		msg, err = c.InvokeChangesetOperation(ctx, p.Channel, ch, p.OperationID, p.Target)
		return err
	})
	if err != nil {
		return nil, true, err
	}
	return map[string]any{"message": msg}, true, nil
}

// readContent answers resourceRead of a changeset's content: the
// chat's read grant, and only contents a changeset of that chat points at.
func (d *changesetDesk) readContent(ctx context.Context, cl *client, uri, encoding string) (any, error) {
	chatURI, hash, ok := changeset.ParseContent(uri)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrNotFound, uri)
	}
	if !cl.principal.Can(auth.ChatTurns) {
		return nil, ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "reading %s needs the grant %s", uri, auth.ChatTurns), map[string]any{"grant": auth.ChatTurns})
	}
	data, found, err := d.env.Store.Changesets().Content(ctx, chatURI, hash)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", ahp.ErrNotFound, uri)
	}
	res := map[string]any{"contentType": "text/plain"}
	if encoding != encodingBase64 && utf8.Valid(data) {
		res["data"], res["encoding"] = string(data), encodingUTF8
	} else {
		res["data"], res["encoding"] = base64.StdEncoding.EncodeToString(data), encodingBase64
	}
	return res, nil
}
