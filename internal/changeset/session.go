package changeset

import (
	"encoding/base64"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
)

// A git session's changesets (VS Code's changesetUri.ts shapes), nested
// under the session's URI so they go with it:
//
//	<session>/changeset/uncommitted            the work tree against HEAD
//	<session>/changeset/branch                 against the session's branch point
//	<session>/changeset/session                since the session began
//	<session>/changeset/turn/<turnId>          what one turn changed
//	<session>/changeset/compare/<a>/<b>        turn a's end against turn b's
//
// They are computed from git (internal/gitwork), so they hold every change
// to the work tree, whoever made it.

// Session changeset kinds (Changeset.changeKind).
const (
	KindBranch      = "branch"
	KindUncommitted = "uncommitted"
	KindSession     = "session"
	KindCompare     = "compare-turns"
)

const sessionSegment = "/changeset/"

// SessionChannel is a parsed session changeset channel.
type SessionChannel struct {
	Session string
	Kind    string // KindBranch, KindUncommitted, KindSession, KindTurn, KindCompare
	Turn    string // KindTurn: the turn
	// KindCompare: the turns whose ends are compared, Original → Modified.
	Original, Modified string
}

// SessionURI is the channel of a session changeset of kind (not a turn's
// nor a comparison's).
func SessionURI(session, kind string) string { return session + sessionSegment + kind }

// SessionTurnURI is the channel of the changeset of one turn of session.
func SessionTurnURI(session, turn string) string {
	return session + sessionSegment + "turn/" + turn
}

// SessionCompareURI is the channel comparing two turns' ends.
func SessionCompareURI(session, original, modified string) string {
	return session + sessionSegment + "compare/" + original + "/" + modified
}

// IsSessionChannel reports whether uri has the session changeset shape.
func IsSessionChannel(uri string) bool { _, ok := ParseSessionChannel(uri); return ok }

// ParseSessionChannel reads a session changeset channel. The session part
// is whatever precedes the last /changeset/; the caller checks that it is
// a session.
func ParseSessionChannel(uri string) (SessionChannel, bool) {
	i := strings.LastIndex(uri, sessionSegment)
	if i <= 0 || IsChannel(uri) {
		return SessionChannel{}, false
	}
	ch := SessionChannel{Session: uri[:i]}
	rest := uri[i+len(sessionSegment):]
	validTurn := func(t string) bool {
		return t != "" && !strings.Contains(t, "/") && !strings.HasPrefix(t, "{") && len(t) <= 256
	}
	switch {
	case rest == KindBranch || rest == KindUncommitted || rest == KindSession:
		ch.Kind = rest
	case strings.HasPrefix(rest, "turn/"):
		ch.Kind, ch.Turn = KindTurn, strings.TrimPrefix(rest, "turn/")
		if !validTurn(ch.Turn) {
			return SessionChannel{}, false
		}
	case strings.HasPrefix(rest, "compare/"):
		a, b, ok := strings.Cut(strings.TrimPrefix(rest, "compare/"), "/")
		if !ok || !validTurn(a) || !validTurn(b) {
			return SessionChannel{}, false
		}
		ch.Kind, ch.Original, ch.Modified = KindCompare, a, b
	default:
		return SessionChannel{}, false
	}
	return ch, true
}

// SessionCatalogue is a git session's SessionState.changesets: before its
// first turn only its uncommitted changes (VS Code's host advertises a new
// session so); once a turn ran, its branch changes (reviewable), its
// uncommitted changes, everything since it began, and the per-turn and
// compare templates.
func SessionCatalogue(session string, materialized bool, branchDescription string) []ahp.Changeset {
	uncommitted := ahp.Changeset{Label: "Uncommitted Changes", Description: "Show uncommitted changes in this session",
		URITemplate: SessionURI(session, KindUncommitted), ChangeKind: KindUncommitted}
	if !materialized {
		return []ahp.Changeset{uncommitted}
	}
	return []ahp.Changeset{
		{Label: "Branch Changes", Description: branchDescription, URITemplate: SessionURI(session, KindBranch), ChangeKind: KindBranch,
			Capabilities: map[string]any{"review": map[string]any{}}},
		uncommitted,
		{Label: "Session Changes", Description: "Show all changes made in this session", URITemplate: SessionURI(session, KindSession), ChangeKind: KindSession},
		{Label: "This Turn", Description: "Show changes made in this turn", URITemplate: SessionTurnURI(session, "{turnId}"), ChangeKind: KindTurn},
		{Label: "Compare Turns", Description: "Show changes made between different turns",
			URITemplate: SessionCompareURI(session, "{originalTurnId}", "{modifiedTurnId}"), ChangeKind: KindCompare},
	}
}

// GitContentScheme names a blob of a git session's repository, read with
// resourceRead: ahp-changeset-git:/<base64url(session)>/<object id>.
const GitContentScheme = "ahp-changeset-git"

// GitContentURI names blob id of session's repository.
func GitContentURI(session, id string) string {
	return GitContentScheme + ":/" + base64.RawURLEncoding.EncodeToString([]byte(session)) + "/" + id
}

// IsGitContent reports whether uri is of GitContentScheme.
func IsGitContent(uri string) bool { return strings.HasPrefix(uri, GitContentScheme+":") }

// ParseGitContent reads a GitContentURI: its session and object id (hex,
// 40 or 64 digits).
func ParseGitContent(uri string) (session, id string, ok bool) {
	rest, ok := strings.CutPrefix(uri, GitContentScheme+":/")
	if !ok {
		return "", "", false
	}
	seg, id, _ := strings.Cut(rest, "/")
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil || len(b) == 0 {
		return "", "", false
	}
	if (len(id) != 40 && len(id) != 64) || strings.Trim(id, "0123456789abcdef") != "" {
		return "", "", false
	}
	return string(b), id, true
}

// Operation ids of a git session's changesets (VS Code's names, and undo).
const (
	OpCommit  = "commit"
	OpDiscard = "discard-changes"
	OpSync    = "sync"
	OpUndo    = "undo"
)

// Operation scopes.
const (
	ScopeChangeset = "changeset"
	ScopeResource  = "resource"
)

// SessionOperations are what a session changeset of kind offers: the
// uncommitted changes a whole-changeset commit and a per-file discard
// once there are any, and a sync once the branch has commits its upstream
// lacks; a turn's and the session's changes a per-file or whole undo
// (back to how the turn, or the session, found the files).
func SessionOperations(kind string, files int, outgoing int) []ahp.ChangesetOperation {
	var ops []ahp.ChangesetOperation
	switch kind {
	case KindUncommitted:
		if files > 0 {
			ops = append(ops,
				ahp.ChangesetOperation{ID: OpCommit, Label: "Commit", Description: "Commit these changes", Scopes: []string{ScopeChangeset}, Icon: "check", Status: "idle"},
				ahp.ChangesetOperation{ID: OpDiscard, Label: "Discard Changes", Description: "Return the file to its committed contents", Scopes: []string{ScopeResource}, Icon: "discard", Status: "idle"})
		}
		if outgoing > 0 {
			ops = append(ops, ahp.ChangesetOperation{ID: OpSync, Label: "Sync", Description: "Pull from the upstream branch, then push", Scopes: []string{ScopeChangeset}, Icon: "sync", Status: "idle"})
		}
	case KindTurn, KindSession:
		if files > 0 {
			ops = append(ops, ahp.ChangesetOperation{ID: OpUndo, Label: "Undo", Description: "Restore the files as they were before", Scopes: []string{ScopeChangeset, ScopeResource}, Icon: "discard", Status: "idle"})
		}
	}
	return ops
}

// Offers reports whether ops hold operation id for a target of scope
// (ScopeChangeset for no target).
func Offers(ops []ahp.ChangesetOperation, id, scope string) bool {
	for _, o := range ops {
		if o.ID == id {
			for _, s := range o.Scopes {
				if s == scope {
					return true
				}
			}
		}
	}
	return false
}
