package chat

import (
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
)

// TestGrantForEachAct: writing is one operation per act, each with its
// grant (C-GRANT-04); the table is CHATS.md's "Grants", with reading 14
// for the acts it does not name (docs/CHATS.md).
func TestGrantForEachAct(t *testing.T) {
	cases := []struct {
		rule   string
		action ahp.Action
		grant  string
	}{
		{"C-GRANT-08", ahp.ChatTurnStarted{}, auth.ChatSend},
		{"C-GRANT-09", ahp.ChatTurnCancelled{}, auth.ChatCancel},
		{"C-GRANT-10", ahp.ChatQueuedMessagesReordered{}, auth.ChatSend},
		{"C-GRANT-10", ahp.ChatPendingMessageSet{}, auth.ChatSend},
		{"C-GRANT-10", ahp.ChatPendingMessageRemoved{}, auth.ChatCancel},
		{"C-GRANT-10", ahp.ChatTurnResume{}, auth.ChatSend},
		{"C-GRANT-11", ahp.ChatToolCallConfirmed{}, auth.ChatAnswer},
		{"C-GRANT-12", ahp.ChatInputCompleted{}, auth.ChatAnswer},
		{"C-GRANT-12", ahp.ChatInputAnswerChanged{}, auth.ChatAnswer},
		{"C-GRANT-13", ahp.ChatToolCallComplete{}, auth.ChatTool},
		{"C-GRANT-13", ahp.ChatToolCallResultConfirmed{}, auth.ChatTool},
		{"C-GRANT-13", ahp.ChatToolCallContentChanged{}, auth.ChatTool},
		{"C-GRANT-14", ahp.ChatDraftChanged{}, auth.ChatDraft},
		{"C-GRANT-15", ahp.ChatWorkingDirectorySet{}, auth.ChatFolders},
		{"C-GRANT-15", ahp.ChatWorkingDirectoryRemoved{}, auth.ChatFolders},
		{"C-GRANT-16", ahp.ChatIsReadChanged{}, auth.ChatMark},
		{"C-GRANT-17", ahp.ChatIsArchivedChanged{}, auth.ChatMark},
		{"C-GRANT-18", ahp.ChatTruncated{}, auth.ChatTruncate},
	}
	for _, c := range cases {
		t.Run(c.rule+"/"+c.action.ActionType(), func(t *testing.T) {
			if got := ahp.GrantFor(c.action.ActionType()); got != c.grant {
				t.Fatalf("grantFor(%s) = %q, want %q", c.action.ActionType(), got, c.grant)
			}
			// A principal holding only that grant may do it; one holding
			// only chat:turns may not.
			if !(auth.Principal{Grants: []string{c.grant}}).Can(ahp.GrantFor(c.action.ActionType())) {
				t.Fatal("the grant does not cover its act")
			}
			if (auth.Principal{Grants: []string{auth.ChatTurns}}).Can(ahp.GrantFor(c.action.ActionType())) {
				t.Fatal("reading covers a write")
			}
		})
	}
}
