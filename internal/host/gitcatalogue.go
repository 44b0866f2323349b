package host

import (
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/changeset"
)

// The catalogue and operations of a git session's changesets: pure rules
// over the changeset kinds (internal/changeset/session.go), tested by
// table (gitcatalogue_test.go).

// sessionCatalogue is a git session's SessionState.changesets: before its
// first turn only its uncommitted changes (VS Code's host advertises a new
// session so); once a turn ran, its branch changes (reviewable), its
// uncommitted changes, everything since it began, and the per-turn and
// compare templates.
func sessionCatalogue(session string, materialized bool, branchDescription string) []ahp.Changeset {
	uncommitted := ahp.Changeset{Label: "Uncommitted Changes", Description: "Show uncommitted changes in this session",
		URITemplate: changeset.SessionURI(session, changeset.KindUncommitted), ChangeKind: changeset.KindUncommitted}
	if !materialized {
		return []ahp.Changeset{uncommitted}
	}
	return []ahp.Changeset{
		{Label: "Branch Changes", Description: branchDescription, URITemplate: changeset.SessionURI(session, changeset.KindBranch), ChangeKind: changeset.KindBranch,
			Capabilities: map[string]any{"review": map[string]any{}}},
		uncommitted,
		{Label: "Session Changes", Description: "Show all changes made in this session", URITemplate: changeset.SessionURI(session, changeset.KindSession), ChangeKind: changeset.KindSession},
		{Label: "This Turn", Description: "Show changes made in this turn", URITemplate: changeset.SessionTurnURI(session, "{turnId}"), ChangeKind: changeset.KindTurn},
		{Label: "Compare Turns", Description: "Show changes made between different turns",
			URITemplate: changeset.SessionCompareURI(session, "{originalTurnId}", "{modifiedTurnId}"), ChangeKind: changeset.KindCompare},
	}
}

// sessionOperations are what a session changeset of kind offers: the
// uncommitted changes a whole-changeset commit and a per-file discard
// once there are any, and a sync once the branch has commits its upstream
// lacks; a turn's and the session's changes a per-file or whole undo
// (back to how the turn, or the session, found the files).
func sessionOperations(kind string, files int, outgoing int) []ahp.ChangesetOperation {
	var ops []ahp.ChangesetOperation
	switch kind {
	case changeset.KindUncommitted:
		if files > 0 {
			ops = append(ops,
				ahp.ChangesetOperation{ID: changeset.OpCommit, Label: "Commit", Description: "Commit these changes", Scopes: []string{changeset.ScopeChangeset}, Icon: "check", Status: "idle"},
				ahp.ChangesetOperation{ID: changeset.OpDiscard, Label: "Discard Changes", Description: "Return the file to its committed contents", Scopes: []string{changeset.ScopeResource}, Icon: "discard", Status: "idle"})
		}
		if outgoing > 0 {
			ops = append(ops, ahp.ChangesetOperation{ID: changeset.OpSync, Label: "Sync", Description: "Pull from the upstream branch, then push", Scopes: []string{changeset.ScopeChangeset}, Icon: "sync", Status: "idle"})
		}
	case changeset.KindTurn, changeset.KindSession:
		if files > 0 {
			ops = append(ops, ahp.ChangesetOperation{ID: changeset.OpUndo, Label: "Undo", Description: "Restore the files as they were before", Scopes: []string{changeset.ScopeChangeset, changeset.ScopeResource}, Icon: "discard", Status: "idle"})
		}
	}
	return ops
}

// offers reports whether ops hold operation id for a target of scope
// (changeset.ScopeChangeset for no target).
func offers(ops []ahp.ChangesetOperation, id, scope string) bool {
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
