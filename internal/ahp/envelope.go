package ahp

import (
	"encoding/json"
	"fmt"
)

// ActionOrigin identifies the client that dispatched an action.
type ActionOrigin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// ActionEnvelope is the params of the "action" notification and an entry of
// a reconnect replay: an action on a channel at a serverSeq. Origin is set
// for client-dispatched actions; RejectionReason is set when the host
// refused the action (the envelope is still echoed so the client can roll
// back).
type ActionEnvelope struct {
	Channel         URI
	Action          Action
	ServerSeq       int64
	Origin          *ActionOrigin
	RejectionReason string
}

type envelopeWire struct {
	Channel         URI             `json:"channel"`
	Action          json.RawMessage `json:"action"`
	ServerSeq       int64           `json:"serverSeq"`
	Origin          *ActionOrigin   `json:"origin,omitempty"`
	RejectionReason string          `json:"rejectionReason,omitempty"`
}

// MarshalJSON writes the envelope; the action carries its type.
func (e ActionEnvelope) MarshalJSON() ([]byte, error) {
	if e.Action == nil {
		return nil, fmt.Errorf("action envelope on %s: no action", e.Channel)
	}
	action, err := json.Marshal(e.Action)
	if err != nil {
		return nil, fmt.Errorf("action envelope on %s: %w", e.Channel, err)
	}
	return json.Marshal(envelopeWire{
		Channel:         e.Channel,
		Action:          action,
		ServerSeq:       e.ServerSeq,
		Origin:          e.Origin,
		RejectionReason: e.RejectionReason,
	})
}

// UnmarshalJSON reads an envelope, decoding the action with DecodeAction.
func (e *ActionEnvelope) UnmarshalJSON(b []byte) error {
	var w envelopeWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if len(w.Action) == 0 || string(w.Action) == "null" {
		return Errorf(ErrInvalidParams, "envelope.action: required")
	}
	a, err := DecodeAction(w.Action)
	if err != nil {
		return err
	}
	*e = ActionEnvelope{
		Channel:         w.Channel,
		Action:          a,
		ServerSeq:       w.ServerSeq,
		Origin:          w.Origin,
		RejectionReason: w.RejectionReason,
	}
	return nil
}
