package ahpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Mode is how Send hands a message to a chat.
type Mode int

const (
	// ModeTurn starts a turn (chat/turnStarted). While another turn runs it
	// waits behind it.
	ModeTurn Mode = iota
	// ModeQueue queues the message (chat/pendingMessageSet kind queued); it
	// becomes a turn once the running one ends.
	ModeQueue
	// ModeSteer steers the running turn (chat/pendingMessageSet kind
	// steering); Send then follows that turn to its end.
	ModeSteer
)

// Endings of a turn.
const (
	EndComplete  = "complete"
	EndError     = "error"
	EndCancelled = "cancelled"
)

// SendOptions are Send's callbacks and switches.
type SendOptions struct {
	Mode Mode
	// OnText receives the answer's text as it streams: each markdown
	// part's first content (chat/responsePart) and then its deltas.
	OnText func(text string)
	// OnEnvelope receives every envelope of the chat about the turn.
	OnEnvelope func(Envelope)
	// Cancel, when closed, stops the turn (chat/turnCancelled); Send then
	// waits for its ending.
	Cancel <-chan struct{}
}

// Result is how the turn Send followed ended.
type Result struct {
	TurnID string
	// Ending is EndComplete, EndError or EndCancelled.
	Ending string
	// Error is the chat/error's message.
	Error string
}

// Send subscribes to chat, hands it text as opts.Mode says, and follows
// the turn that carries it until its ending. It returns an error when the
// daemon refuses the message or the connection ends first.
func (c *Client) Send(ctx context.Context, chat, text string, opts SendOptions) (Result, error) {
	st, err := c.Subscribe(ctx, chat)
	if err != nil {
		return Result{}, err
	}
	var cs ahp.ChatState
	if err := json.Unmarshal(st, &cs); err != nil {
		return Result{}, fmt.Errorf("chat %s state: %w", chat, err)
	}
	msg := map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}
	var (
		turnID, queuedID string
		seq              int64
	)
	switch opts.Mode {
	case ModeTurn:
		turnID = uuid.NewString()
		seq, err = c.Dispatch(chat, map[string]any{
			"type": "chat/turnStarted", "turnId": turnID,
			"startedAt": time.Now().UTC().Format(time.RFC3339Nano), "message": msg,
		})
	case ModeQueue:
		queuedID = uuid.NewString()
		seq, err = c.Dispatch(chat, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": queuedID, "message": msg})
	case ModeSteer:
		if cs.ActiveTurn == nil {
			return Result{}, fmt.Errorf("steer %s: no turn is running", chat)
		}
		turnID = cs.ActiveTurn.ID
		seq, err = c.Dispatch(chat, map[string]any{"type": "chat/pendingMessageSet", "kind": "steering", "id": uuid.NewString(), "message": msg})
	}
	if err != nil {
		return Result{}, err
	}
	cancel := opts.Cancel
	cancelled := false
	for {
		select {
		case <-ctx.Done():
			return Result{TurnID: turnID}, ctx.Err()
		case <-cancel:
			cancel = nil
			if turnID != "" && !cancelled {
				cancelled = true
				if _, err := c.Dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": turnID, "duration": 0}); err != nil {
					return Result{TurnID: turnID}, err
				}
			}
		case f, ok := <-c.events:
			if !ok {
				return Result{TurnID: turnID}, fmt.Errorf("send to %s: %w", chat, c.Err())
			}
			if f.Method != "action" {
				continue
			}
			var env Envelope
			if json.Unmarshal(f.Params, &env) != nil || env.Channel != chat {
				continue
			}
			if env.RejectionReason != "" {
				if env.Origin != nil && env.Origin.ClientID == c.clientID && env.Origin.ClientSeq == seq {
					return Result{TurnID: turnID}, fmt.Errorf("%w: %s", ErrRefused, env.RejectionReason)
				}
				continue
			}
			var head struct {
				Type            string `json:"type"`
				TurnID          string `json:"turnId"`
				QueuedMessageID string `json:"queuedMessageId"`
			}
			_ = json.Unmarshal(env.Action, &head)
			if turnID == "" && head.Type == ahp.ActionChatTurnStarted && head.QueuedMessageID == queuedID {
				turnID = head.TurnID
				if cancelled || (opts.Cancel != nil && cancel == nil) {
					// Cancelled while it waited in the queue: stop it now.
					cancelled = true
					if _, err := c.Dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": turnID, "duration": 0}); err != nil {
						return Result{TurnID: turnID}, err
					}
				}
			}
			if turnID == "" || head.TurnID != turnID {
				continue
			}
			if opts.OnEnvelope != nil {
				opts.OnEnvelope(env)
			}
			switch head.Type {
			case ahp.ActionChatResponsePart:
				var a ahp.ChatResponsePart
				if json.Unmarshal(env.Action, &a) == nil && a.Part.Kind == ahp.PartMarkdown && opts.OnText != nil {
					opts.OnText(a.Part.Content)
				}
			case ahp.ActionChatDelta:
				var a ahp.ChatDelta
				if json.Unmarshal(env.Action, &a) == nil && opts.OnText != nil {
					opts.OnText(a.Content)
				}
			case ahp.ActionChatTurnComplete:
				return Result{TurnID: turnID, Ending: EndComplete}, nil
			case ahp.ActionChatTurnCancelled:
				return Result{TurnID: turnID, Ending: EndCancelled}, nil
			case ahp.ActionChatError:
				var a ahp.ChatError
				r := Result{TurnID: turnID, Ending: EndError, Error: "the turn failed"}
				if json.Unmarshal(env.Action, &a) == nil {
					if a.Part.Error != nil && a.Part.Error.Message != "" {
						r.Error = a.Part.Error.Message
					} else if a.Part.Content != "" {
						r.Error = a.Part.Content
					}
				}
				return r, nil
			}
		}
	}
}
