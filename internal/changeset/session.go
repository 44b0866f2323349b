package changeset

import (
	"encoding/base64"
	"strings"
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
