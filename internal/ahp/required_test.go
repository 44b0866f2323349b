package ahp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A client action missing a field AHP requires is refused naming it, and
// one with every required field passes (issue 31: "actions missing
// required fields are accepted and repaired").
func TestCheckClientAction(t *testing.T) {
	tests := []struct {
		name, typ, raw string
		wantErr        string // "" when it passes
	}{
		{"toolCallConfirmed without approved", ActionChatToolCallConfirmed,
			`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1"}`, "approved is required"},
		{"toolCallConfirmed denied", ActionChatToolCallConfirmed,
			`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":false,"reason":"denied"}`, ""},
		{"toolCallComplete without turnId", ActionChatToolCallComplete,
			`{"type":"chat/toolCallComplete","toolCallId":"c1","result":{"success":true}}`, "turnId is required"},
		{"toolCallComplete with an empty turnId", ActionChatToolCallComplete,
			`{"type":"chat/toolCallComplete","turnId":"","toolCallId":"c1","result":{"success":true}}`, "turnId is required"},
		{"toolCallComplete without result", ActionChatToolCallComplete,
			`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"c1"}`, "result is required"},
		{"turnStarted without an origin", ActionChatTurnStarted,
			`{"type":"chat/turnStarted","turnId":"t1","message":{"text":"hi"}}`, "message.origin is required"},
		{"turnStarted with an origin of no kind", ActionChatTurnStarted,
			`{"type":"chat/turnStarted","turnId":"t1","message":{"text":"hi","origin":{"kind":""}}}`, "message.origin.kind is required"},
		{"turnStarted with a null message", ActionChatTurnStarted,
			`{"type":"chat/turnStarted","turnId":"t1","message":null}`, "message is required"},
		{"turnStarted whole", ActionChatTurnStarted,
			`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-12-05T00:00:00Z","message":{"text":"hi","origin":{"kind":"user"}}}`, ""},
		{"inputCompleted without response", ActionChatInputCompleted,
			`{"type":"chat/inputCompleted","requestId":"r1"}`, "response is required"},
		{"titleChanged to an empty title", ActionSessionTitleChanged,
			`{"type":"session/titleChanged","title":""}`, ""},
		{"an action with nothing required", ActionChatDraftChanged,
			`{"type":"chat/draftChanged"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckClientAction(tt.typ, json.RawMessage(tt.raw))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("err %v, want ErrInvalidParams naming %q", err, tt.wantErr)
			}
		})
	}
}

// Every type the table names is a client-dispatchable action.
func TestRequiredFieldsNameClientActions(t *testing.T) {
	for typ := range clientRequired {
		if !IsClientDispatchable(typ) {
			t.Errorf("%s has required fields listed but is not client-dispatchable", typ)
		}
	}
}
