package ahp

import (
	"bytes"
	"encoding/json"
	"strings"
)

// clientRequired names, for the actions a client dispatches, the fields AHP
// requires of them beyond `type`, as dotted paths into the action object
// (microsoft/agent-host-protocol types/channels-chat/actions.ts: the fields
// without `?`). Decoding leaves a missing field at its zero value, which an
// owner would then take for a choice the client never made (a missing
// `approved` is not a denial, a missing `turnId` is no turn), so such an
// action is refused whole, with the field named, and changes nothing.
//
// Left out on purpose: `startedAt` of chat/turnStarted and `duration` of
// chat/turnCancelled, which the host stamps itself when a client leaves
// them out (its own clock is the one the chat's times come from).
var clientRequired = map[string][]string{
	ActionChatTurnStarted:             {"turnId", "message", "message.origin", "message.origin.kind"},
	ActionChatToolCallConfirmed:       {"turnId", "toolCallId", "approved"},
	ActionChatToolCallComplete:        {"turnId", "toolCallId", "result"},
	ActionChatToolCallResultConfirmed: {"turnId", "toolCallId", "approved"},
	ActionChatToolCallContentChanged:  {"turnId", "toolCallId", "content"},
	ActionChatTurnCancelled:           {"turnId"},
	ActionChatTurnResume:              {"turnId"},
	ActionChatPendingMessageSet:       {"kind", "id", "message", "message.origin", "message.origin.kind"},
	ActionChatPendingMessageRemoved:   {"kind", "id"},
	ActionChatQueuedMessagesReordered: {"order"},
	ActionChatWorkingDirectorySet:     {"directory"},
	ActionChatWorkingDirectoryRemoved: {"directory"},
	ActionChatIsReadChanged:           {"isRead"},
	ActionChatIsArchivedChanged:       {"isArchived"},
	ActionChatInputAnswerChanged:      {"requestId", "questionId"},
	ActionChatInputCompleted:          {"requestId", "response"},
	ActionSessionTitleChanged:         {"title"},
	// channels-automation/actions.ts: a definition is complete when created.
	ActionAutomationCreateRequested: {"resource", "definition", "definition.title", "definition.message",
		"definition.message.origin", "definition.message.origin.kind", "definition.session", "definition.enabled", "definition.triggers"},
	ActionAutomationUpdateRequested: {"resource", "changes"},
	ActionAutomationRemoved:         {"resource"},
}

// nonEmpty are the required fields that name something, so "" is as
// missing as absent.
var nonEmpty = map[string]bool{
	"turnId": true, "toolCallId": true, "id": true, "requestId": true,
	"questionId": true, "kind": true, "directory": true, "resource": true,
}

// CheckClientAction reports the first field AHP requires of a client's
// action that raw lacks (absent or null), as an ErrInvalidParams error
// naming it; nil when every required field is there. raw is the action
// object as the client sent it.
func CheckClientAction(actionType string, raw json.RawMessage) error {
	paths := clientRequired[actionType]
	if len(paths) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Errorf(ErrInvalidParams, "action %s: %v", actionType, err)
	}
	for _, path := range paths {
		if !present(obj, strings.Split(path, ".")) {
			return Errorf(ErrInvalidParams, "action %s: %s is required", actionType, path)
		}
	}
	return nil
}

// present reports whether the field at path is in obj and not null.
func present(obj map[string]json.RawMessage, path []string) bool {
	v, ok := obj[path[0]]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return false
	}
	if len(path) == 1 {
		// An identifier that is empty names nothing (an empty turnId, an
		// origin kind of ""); an empty title is a title.
		var s string
		if nonEmpty[path[0]] && json.Unmarshal(v, &s) == nil && s == "" {
			return false
		}
		return true
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(v, &inner) != nil {
		return false
	}
	return present(inner, path[1:])
}
