// Package auth says who a connection is and what it may do: principals
// (the typed reference their turns name) and grants of the form
// "<subject>:<operation>". The host checks a grant before every gated
// request and client action; the rules are pure and table-tested.
package auth

import "strings"

// Chat grants (CHATS.md "Grants").
const (
	ChatTurns    = "chat:turns"
	ChatCreate   = "chat:create"
	ChatDispose  = "chat:dispose"
	ChatSend     = "chat:send"
	ChatCancel   = "chat:cancel"
	ChatAnswer   = "chat:answer"
	ChatTool     = "chat:tool"
	ChatDraft    = "chat:draft"
	ChatFolders  = "chat:folders"
	ChatMark     = "chat:mark"
	ChatTruncate = "chat:truncate"
)

// Session grants that gate reading.
const (
	SessionList  = "session:list"
	SessionState = "session:state"
)

// Resource and terminal grants: the host's files under the served paths
// (the resource* commands and resource watches) and its terminals.
const (
	ResourceRead  = "resource:read"
	ResourceWrite = "resource:write"
	TerminalRead  = "terminal:read"
	TerminalWrite = "terminal:write"
)

// ResourceClients lets a connection run the resource* commands on files
// another connected client hosts (a vscode-agent-client URI naming another
// connection's clientId): the host forwards them to that client, so it is
// reaching into another user's machine, a grant of its own. A client's
// own files need only resource:read and resource:write.
const ResourceClients = "resource:clients"

// Changeset grants: keeping a turn's changes (marking them reviewed) and
// undoing them (writing files back). Reading a changeset is reading its
// chat (chat:turns).
const (
	ChangesetReview = "changeset:review"
	ChangesetUndo   = "changeset:undo"
	// ChangesetCommit commits a git session's changes and syncs its
	// branch with its upstream (pull, then push): it writes the
	// repository's history and reaches its remote, so no group holds it.
	ChangesetCommit = "changeset:commit"
)

// HostWorktrees lets a connection list the worktrees the host made for
// sessions and prune the ones kept after their session ended (ahpd
// worktrees): it names every session's repository and removes worktrees.
const HostWorktrees = "host:worktrees"

// SessionClone lets a connection create a session from repositories
// (createSession's repositories): the host clones each source into its
// worktrees folder, reaching the network for a URL, or reading a local
// repository of the served paths. It comes on top of session:create, and
// no group holds it.
const SessionClone = "session:clone"

// HostDiagnose lets a connection run the host's network diagnostics (the
// window's troubleshooting pane): what the host reaches, and a fetch of a
// URL from the host, which is why it is a grant of its own.
const HostDiagnose = "host:diagnose"

// HostLogs lets a connection subscribe to the host's OTLP log channel
// (ahp-otlp://logs/{level}): the daemon's own log records, down to the
// debug and trace records it does not write out, secrets named as such
// redacted. Logs say what every connection and session did, so reading
// them is a grant of its own, as diagnostics are.
const HostLogs = "host:logs"

// Automation grants (the ahp-automations:// catalogue and its runs):
// reading the catalogue, a run and its history; authoring an automation
// (create, update, remove); and running one by hand or cancelling a run.
// An automation's runs start sessions as the one who created it, so
// creating one also needs session:create when it runs.
const (
	AutomationRead  = "automation:read"
	AutomationWrite = "automation:write"
	AutomationRun   = "automation:run"
)

// groups maps a group grant to the grants it covers. A session's group
// covers the chat operations the same way (C-GRANT-05): "session:write"
// holds every chat write, "session:read" chat reading.
var groups = map[string][]string{
	"chat:read":     {ChatTurns},
	"chat:write":    {ChatCreate, ChatDispose, ChatSend, ChatCancel, ChatAnswer, ChatTool, ChatDraft, ChatFolders, ChatMark, ChatTruncate, ChangesetReview, ChangesetUndo},
	"session:read":  {"session:list", "session:state", ChatTurns},
	"session:write": {"session:create", "session:dispose", "session:rename", "session:configure", "session:folders", "session:mark", "session:annotate", ChatCreate, ChatDispose, ChatSend, ChatCancel, ChatAnswer, ChatTool, ChatDraft, ChatFolders, ChatMark, ChatTruncate, ChangesetReview, ChangesetUndo},
}

// Principal is who a connection is.
type Principal struct {
	// Sender is the typed reference turns sent by this principal name:
	// "user:<id>" or "root:<host>" (C-TURN-04..06).
	Sender string
	// Grants held; "*" holds all, "<subject>:*" every operation of a
	// subject, and group grants cover their members.
	Grants []string
}

// Root is the deployment itself: it holds every grant.
func Root(host string) Principal {
	return Principal{Sender: "root:" + host, Grants: []string{"*"}}
}

// Can reports whether p holds grant.
func (p Principal) Can(grant string) bool {
	subject, _, _ := strings.Cut(grant, ":")
	for _, g := range p.Grants {
		switch {
		case g == "*", g == grant, g == subject+":*":
			return true
		case g == "session:*" && subject == "chat":
			return true
		}
		for _, member := range groups[g] {
			if member == grant {
				return true
			}
		}
	}
	return false
}
