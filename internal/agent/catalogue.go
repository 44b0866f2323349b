package agent

import (
	"context"
	"time"
)

// Catalogue is implemented by a backend that keeps conversations on its
// own (a CLI's transcripts) and can find one by its id without starting
// anything. The host reads it when a client names a session it has not
// registered (VS Code's derived default chat of a session it remembers),
// and serves that session when the backend has it (C-FIRST-08, 09).
type Catalogue interface {
	FindConversation(ctx context.Context, id string) (ConversationInfo, bool, error)
}

// ConversationInfo is what a catalogue knows of a kept conversation.
type ConversationInfo struct {
	ID string
	// Directory is where the conversation ran ("" when unknown).
	Directory string
	// Title is a short title (its first prompt), "" when unknown.
	Title             string
	Created, Modified time.Time
}
