package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/confine"
	"github.com/ahpd/ahpd/internal/gitwork"
	"github.com/ahpd/ahpd/internal/store"
)

// The git session's changeset channels as clients reach them: subscribe,
// the one client action they take (changeset/filesReviewChanged),
// invokeChangesetOperation and the blobs their files point at. Reading is
// chat:turns, as every changeset; a review mark changeset:review; discard
// and undo changeset:undo; commit and sync changeset:commit.

// gitSession is a live git session of the catalogue, with its record.
func (g *gitDesk) gitSession(ctx context.Context, channel, session string) (*store.SessionGit, error) {
	if _, ok := g.cat.session(session); !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
	}
	rec := g.record(ctx, session)
	if rec == nil {
		return nil, ahp.WithData(fmt.Errorf("%w: %s (the session does not work in a git repository; its chats' changesets are on their own channels)", ahp.ErrResourceNotFound, channel), nil)
	}
	return rec, nil
}

func needGrant(cl *client, what string, grants ...string) error {
	for _, g := range grants {
		if !cl.principal.Can(g) {
			return ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "%s needs the grant %s", what, g), map[string]any{"grant": g})
		}
	}
	return nil
}

// subscribe answers a subscription to a session changeset channel: its
// state computed now (ready, or error for a turn no snapshot names), and a
// refresh queued, so the subscriber hears the computation end
// (changeset/statusChanged) as VS Code's host says it.
func (g *gitDesk) subscribe(ctx context.Context, cl *client, channel string, ch changeset.SessionChannel) (ahp.Snapshot, error) {
	if err := needGrant(cl, "reading "+channel, auth.ChatTurns); err != nil {
		return ahp.Snapshot{}, err
	}
	rec, err := g.gitSession(ctx, channel, ch.Session)
	if err != nil {
		return ahp.Snapshot{}, err
	}
	if !g.watch(ch.Session, channel) {
		return ahp.Snapshot{}, ahp.Errorf(ahp.ErrInvalidRequest, "%s: the session has %d changeset channels watched already", channel, maxWatchedChangesets)
	}
	ctx, cancel := context.WithTimeout(ctx, gitCallTimeout)
	defer cancel()
	st := g.compute(ctx, rec, ch)
	raw, err := json.Marshal(st)
	if err != nil {
		return ahp.Snapshot{}, err
	}
	seq := g.bus.Subscribe(cl, channel)
	g.refresh(ch.Session)
	return ahp.Snapshot{Resource: channel, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// dispatch takes a client's action on a session changeset channel, off
// the read loop (the caller routes it onto the channel's lane): a review
// mark is stored, then echoed to every watcher, and the session's
// changesets refreshed; any other changeset action is the host's own.
func (g *gitDesk) dispatch(cl *client, channel string, ch changeset.SessionChannel, a ahp.Action, origin *ahp.ActionOrigin) {
	review, ok := a.(ahp.ChangesetFilesReviewChanged)
	if !ok {
		g.bus.Refuse(cl, channel, a, origin, "Action is not client-dispatchable.")
		return
	}
	if err := needGrant(cl, a.ActionType(), auth.ChatTurns, auth.ChangesetReview); err != nil {
		g.bus.Refuse(cl, channel, a, origin, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitCallTimeout)
	defer cancel()
	rec, err := g.gitSession(ctx, channel, ch.Session)
	if err != nil {
		g.bus.Refuse(cl, channel, a, origin, err.Error())
		return
	}
	if len(review.Files) == 0 || len(review.Files) > maxReviewFiles {
		g.bus.Refuse(cl, channel, a, origin, fmt.Sprintf("files: name 1 to %d files", maxReviewFiles))
		return
	}
	for _, f := range review.Files {
		if _, err := g.workTreePath(rec, f); err != nil {
			g.bus.Refuse(cl, channel, a, origin, err.Error())
			return
		}
	}
	if err := g.env.Store.Git().SetReviewed(ctx, ch.Session, review.Files, review.Reviewed); err != nil {
		g.bus.Refuse(cl, channel, a, origin, err.Error())
		return
	}
	g.bus.Publish(channel, review, origin)
	g.refresh(ch.Session)
}

// workTreePath is the path relative to the session's work tree of a file
// URI, which must lie inside it (no "..", no symlinked parent leading out).
func (g *gitDesk) workTreePath(rec *store.SessionGit, uri string) (string, error) {
	p, err := ahp.LocalPath(uri)
	if err != nil {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "%s: %v", uri, err)
	}
	if _, err := confine.ResolveNew(filepath.Dir(p), []string{rec.Dir}); err != nil {
		return "", ahp.Errorf(ahp.ErrPermissionDenied, "%s is outside the session's work tree: %v", uri, err)
	}
	rel, err := filepath.Rel(rec.Dir, p)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", ahp.Errorf(ahp.ErrPermissionDenied, "%s is outside the session's work tree", uri)
	}
	return filepath.ToSlash(rel), nil
}

// invoke runs an operation of a session changeset: commit and sync on the
// whole of the uncommitted changes, discard-changes on one of its files,
// undo on a turn's or the session's changes (all, or one file). An
// operation the changeset does not offer for that target (none at all, or
// not now) is refused. Its progress is the operation's status on the
// channel: running, then idle or error.
func (g *gitDesk) invoke(ctx context.Context, cl *client, p invokeChangesetParams, ch changeset.SessionChannel) (any, error) {
	grant := auth.ChangesetUndo
	if p.OperationID == changeset.OpCommit || p.OperationID == changeset.OpSync {
		grant = auth.ChangesetCommit
	}
	if err := needGrant(cl, methodInvokeChangesetOperation+" "+p.OperationID, auth.ChatTurns, grant); err != nil {
		return nil, err
	}
	rec, err := g.gitSession(ctx, p.Channel, ch.Session)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gitCallTimeout)
	defer cancel()
	st := g.compute(ctx, rec, ch)
	scope := changeset.ScopeChangeset
	if p.Target != nil {
		if p.Target.Kind != changeset.ScopeResource {
			return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.target.kind: %q is not a target %s takes", p.Target.Kind, p.Channel)
		}
		scope = changeset.ScopeResource
	}
	if !slices.ContainsFunc(st.Operations, func(o ahp.ChangesetOperation) bool { return o.ID == p.OperationID }) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.operationId: %s offers no operation %q now", p.Channel, p.OperationID)
	}
	if !offers(st.Operations, p.OperationID, scope) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.target: %s offers %s for a %s target only, not a %s", p.Channel, p.OperationID, otherScope(scope), scope)
	}
	var paths []string
	if p.Target != nil {
		if paths, err = targetPaths(rec, st.Files, p.Target.Resource); err != nil {
			return nil, err
		}
	}
	g.bus.Publish(p.Channel, ahp.ChangesetOperationStatusChanged{OperationID: p.OperationID, Status: "running"}, nil)
	msg, err := g.run(ctx, rec, ch, p.OperationID, paths)
	if err != nil {
		g.bus.Publish(p.Channel, ahp.ChangesetOperationStatusChanged{OperationID: p.OperationID, Status: ahp.ChangesetError,
			Error: &ahp.ErrorInfo{ErrorType: p.OperationID + "Failed", Message: err.Error()}}, nil)
		g.refresh(ch.Session)
		return nil, err
	}
	g.bus.Publish(p.Channel, ahp.ChangesetOperationStatusChanged{OperationID: p.OperationID, Status: "idle"}, nil)
	g.refresh(ch.Session)
	return map[string]any{"message": msg}, nil
}

func otherScope(scope string) string {
	if scope == changeset.ScopeResource {
		return changeset.ScopeChangeset
	}
	return changeset.ScopeResource
}

// targetPaths are the work-tree paths of the changeset file a resource
// target names (both of a rename): its id or either side's URI.
func targetPaths(rec *store.SessionGit, files []ahp.ChangesetFile, resource string) ([]string, error) {
	for _, f := range files {
		var edit struct {
			Before *struct{ URI string } `json:"before"`
			After  *struct{ URI string } `json:"after"`
		}
		_ = json.Unmarshal(f.Edit, &edit)
		var uris []string
		for _, s := range []*struct{ URI string }{edit.Before, edit.After} {
			if s != nil && !slices.Contains(uris, s.URI) {
				uris = append(uris, s.URI)
			}
		}
		if f.ID != resource && !slices.Contains(uris, resource) {
			continue
		}
		var paths []string
		for _, u := range uris {
			p, err := ahp.LocalPath(u)
			if err != nil {
				return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.target.resource: %v", err)
			}
			rel, err := filepath.Rel(rec.Dir, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				return nil, ahp.Errorf(ahp.ErrPermissionDenied, "params.target.resource: %s is outside the session's work tree", resource)
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return paths, nil
	}
	return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.target.resource: %s is not a file of this changeset", resource)
}

// run carries out an operation through git (gitwork: never by writing
// contents from memory). paths are the target's, none for the whole.
func (g *gitDesk) run(ctx context.Context, rec *store.SessionGit, ch changeset.SessionChannel, op string, paths []string) (string, error) {
	switch op {
	case changeset.OpCommit:
		if _, err := gitwork.Commit(ctx, rec.Dir, "Changes of an ahpd session", nil); err != nil {
			return "", fmt.Errorf("Failed to commit changes: %w", err)
		}
		return "Committed changes.", nil
	case changeset.OpDiscard:
		if err := gitwork.DiscardChanges(ctx, rec.Dir, paths); err != nil {
			return "", fmt.Errorf("Failed to discard changes: %w", err)
		}
		return "Discarded changes.", nil
	case changeset.OpSync:
		if err := gitwork.Sync(ctx, rec.Dir); err != nil {
			return "", fmt.Errorf("Failed to sync changes: %w", err)
		}
		return "Synced changes.", nil
	case changeset.OpUndo:
		return g.undo(ctx, rec, ch, paths)
	}
	return "", ahp.Errorf(ahp.ErrInvalidParams, "params.operationId: %q", op)
}

// undo returns files to how the turn (or the session) found them, with git
// restore from its start snapshot. A file changed again since the turn
// ended is refused, named: undoing it would lose that later change.
func (g *gitDesk) undo(ctx context.Context, rec *store.SessionGit, ch changeset.SessionChannel, paths []string) (string, error) {
	base := rec.Start
	if ch.Kind == changeset.KindTurn {
		t, ok, err := g.env.Store.Git().Turn(ctx, rec.Session, ch.Turn)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "%s has no turn %s", rec.Session, ch.Turn)
		}
		base = t.Start
		if len(paths) == 0 {
			changes, err := g.changes(ctx, rec, ch)
			if err != nil {
				return "", err
			}
			paths = changedPaths(changes)
		}
		if t.End != "" {
			since, err := gitwork.Changes(ctx, rec.Dir, t.End)
			if err != nil {
				return "", err
			}
			var later []string
			for _, p := range changedPaths(since) {
				if slices.Contains(paths, p) {
					later = append(later, p)
				}
			}
			if len(later) > 0 {
				return "", ahp.WithData(ahp.Errorf(ahp.ErrConflict, "undo refused: changed since the turn: %s", strings.Join(later, ", ")), map[string]any{"changed": later})
			}
		}
	} else if len(paths) == 0 {
		changes, err := g.changes(ctx, rec, ch)
		if err != nil {
			return "", err
		}
		paths = changedPaths(changes)
	}
	if err := gitwork.RestorePaths(ctx, rec.Dir, base, paths); err != nil {
		return "", fmt.Errorf("Failed to undo changes: %w", err)
	}
	return fmt.Sprintf("Undid %d file(s).", len(paths)), nil
}

// changedPaths are the paths changes touch (both of a rename).
func changedPaths(changes []gitwork.Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.Path)
		if c.OldPath != "" {
			out = append(out, c.OldPath)
		}
	}
	return out
}

// readContent answers resourceRead of a blob a git session's changeset
// points at: the read grant, a live git session, and an object of its
// repository, bounded (gitwork.MaxShowBytes).
func (g *gitDesk) readContent(ctx context.Context, cl *client, uri, encoding string) (any, error) {
	session, id, ok := changeset.ParseGitContent(uri)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ahp.ErrNotFound, uri)
	}
	if err := needGrant(cl, "reading "+uri, auth.ChatTurns); err != nil {
		return nil, err
	}
	rec, err := g.gitSession(ctx, uri, session)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ahp.ErrNotFound, uri)
	}
	ctx, cancel := context.WithTimeout(ctx, gitCallTimeout)
	defer cancel()
	data, err := gitwork.ReadBlob(ctx, rec.Dir, id)
	if errors.Is(err, gitwork.ErrTooLarge) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "%s: %v", uri, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ahp.ErrNotFound, uri)
	}
	res := map[string]any{"contentType": "text/plain"}
	if encoding != encodingBase64 && utf8.Valid(data) {
		res["data"], res["encoding"] = string(data), encodingUTF8
	} else {
		res["data"], res["encoding"] = base64.StdEncoding.EncodeToString(data), encodingBase64
	}
	return res, nil
}
