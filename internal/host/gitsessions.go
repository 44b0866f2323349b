package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/gitwork"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

// Sessions that work in git (issue 33). A session whose working directory
// is inside a git work tree is a git session: the host records where its
// work tree is, the commit its branch changes count from and a snapshot of
// the tree as it began, and snapshots the tree as each of its turns starts
// and ends (chat.Config.OnTurn). Its changesets, on channels under the
// session's URI (internal/changeset/session.go), are computed from those
// snapshots with the real git (internal/gitwork), so they hold every file
// added, changed or deleted, whoever did it: an edit tool, a shell, a !
// command, a terminal. A session asked for isolation "worktree" works in a
// git worktree of its own, made under the worktrees folder on a new branch,
// and removed when the session is disposed only if nothing would be lost.
//
// A folder that is not a repository keeps the chat's own changesets, taken
// from its edit tool calls (internal/chat/changesets.go).

// Bounds of a git session's changesets.
const (
	// gitCallTimeout bounds the git work of one changeset's computation or
	// one operation.
	gitCallTimeout = time.Minute
	// turnSnapshotTimeout bounds a turn's snapshot, which the chat's actor
	// waits for (the start's must be taken before the backend runs); past
	// it the turn has no changeset of its own, and the log says so.
	turnSnapshotTimeout = 30 * time.Second
	// maxChangesetFiles bounds the files a changeset lists; past it the
	// rest are left out and the state says so (_meta).
	maxChangesetFiles = 2000
	// maxWatchedChangesets bounds the changeset channels of one session
	// kept up to date at once.
	maxWatchedChangesets = 256
	// maxReviewFiles bounds the files one review action names.
	maxReviewFiles = 1000
)

// gitDesk keeps the git sessions: it prepares a new session's work tree,
// snapshots turns, computes and refreshes the changeset channels, runs
// their operations and disposes of worktrees.
type gitDesk struct {
	env   *env.Env
	log   *slog.Logger
	bus   *bus.Bus
	lanes *lanes
	cat   *catalogue
	// root is the folder worktrees are made under.
	root string

	// mu (rank lockorder.HostGit) guards records, watched and pending; it
	// is held for the maps only.
	mu lockorder.Mutex
	// records caches each session's git record; nil: the session has none.
	records map[string]*store.SessionGit
	// watched are the changeset channels of each session a client
	// subscribed, refreshed when the work tree may have changed.
	watched map[string]map[string]bool
	// pending: a refresh of the session is queued on its lane.
	pending map[string]bool
	// closed: the host is closing; no refresh is queued any more.
	closed bool
	// refreshing counts the refreshes queued or running, so the host's
	// Close waits for their git calls before the daemon goes.
	refreshing sync.WaitGroup
	// clones holds a slot per clone running (gitclones.go).
	clones chan struct{}
}

func newGitDesk(e *env.Env, log *slog.Logger, b *bus.Bus, l *lanes, cat *catalogue, root string) *gitDesk {
	return &gitDesk{env: e, log: log, bus: b, lanes: l, cat: cat, root: root,
		mu:      lockorder.Mutex{Rank: lockorder.HostGit},
		records: map[string]*store.SessionGit{}, watched: map[string]map[string]bool{}, pending: map[string]bool{},
		clones: make(chan struct{}, maxConcurrentClones)}
}

// prepare readies a new session's work tree before the session is stored.
// dir is its first working directory (a local path, "" for none),
// requested the config the client sent, values the resolved config. It
// returns the directory the session works in (a new worktree's, or dir)
// and the git record to keep (nil for a session not in git).
func (g *gitDesk) prepare(ctx context.Context, session, dir string, requested, values map[string]any) (string, *store.SessionGit, error) {
	wantWorktree := sessionconfig.Isolation(requested) == sessionconfig.IsolationWorktree
	if dir == "" {
		if wantWorktree {
			return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.config.isolation: a worktree needs a working directory inside a git repository")
		}
		return dir, nil, nil
	}
	if wantWorktree && g.root == "" {
		return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.config.isolation: this daemon has no worktrees folder")
	}
	if err := gitwork.Available(); err != nil {
		if wantWorktree {
			return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.config.isolation: worktree: %v", err)
		}
		return dir, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, gitCallTimeout)
	defer cancel()
	inRepo, err := gitwork.IsWorkTree(ctx, dir)
	if err != nil || !inRepo {
		if wantWorktree {
			why := "is not inside a git repository"
			if err != nil {
				why = err.Error()
			}
			return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.config.isolation: worktree: %s %s", dir, why)
		}
		if err != nil {
			g.log.Warn("git session: not taken as a repository", "dir", dir, "err", err)
		}
		return dir, nil, nil
	}
	top, err := gitwork.TopLevel(ctx, dir)
	if err != nil {
		return "", nil, fmt.Errorf("create session %s: %w", session, err)
	}
	rec := &store.SessionGit{Session: session, Dir: top, CreatedAt: g.env.Now()}
	if !wantWorktree {
		if rec.Base, err = gitwork.ResolveCommit(ctx, top, "HEAD"); err != nil {
			rec.Base = "" // an unborn branch: its changes count from the empty tree
		}
		if rec.Start, err = gitwork.Snapshot(ctx, top); err != nil {
			// A tree git cannot snapshot in time is still a folder to work
			// in: the session goes on as a folder session, and says why.
			g.log.Warn("git session: no snapshot of the work tree; the session keeps its chats' changesets only", "dir", top, "err", err)
			return dir, nil, nil
		}
		g.pin(ctx, rec, "start", rec.Start)
		return dir, rec, nil
	}
	from := sessionconfig.Branch(values)
	if from == "" {
		if from, err = gitwork.CurrentBranch(ctx, top); err != nil || from == "" {
			from = "HEAD"
		}
	}
	name := worktreeName(session)
	wt, err := gitwork.AddWorktree(ctx, top, g.root, filepath.Join(g.root, name), "ahpd/"+name, from)
	if err != nil {
		return "", nil, ahp.Errorf(ahp.ErrInvalidParams, "params.config: the session's worktree from %q: %v", from, err)
	}
	rec.Dir, rec.SourceRepo, rec.Worktree, rec.WorktreeRoot = wt.Path, top, wt.Path, g.root
	rec.Branch, rec.Base, rec.Start = wt.Branch, wt.Head, wt.Head
	work := wt.Path
	if rel, err := filepath.Rel(top, dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") && dirExists(filepath.Join(wt.Path, rel)) {
		work = filepath.Join(wt.Path, rel) // the same folder of the worktree (a folder git does not track is not in it)
	}
	return work, rec, nil
}

// worktreeName is a session's worktree folder and branch suffix: its id
// when that is a plain name, else a fresh one.
func worktreeName(session string) string {
	id, _ := ahp.SessionID(session)
	if id != "" && len(id) <= 100 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == "" &&
		gitwork.ValidateBranchName("ahpd/"+id) == nil {
		return id
	}
	return uuid.NewString()
}

// put stores a new session's git record (before the session is stored, so
// a session is never in git without its record).
func (g *gitDesk) put(ctx context.Context, rec *store.SessionGit) error {
	if err := g.env.Store.Git().Put(ctx, *rec); err != nil {
		return err
	}
	g.mu.Lock()
	g.records[rec.Session] = rec
	g.mu.Unlock()
	return nil
}

// abandon undoes prepare for a session that was not stored after all.
func (g *gitDesk) abandon(ctx context.Context, rec *store.SessionGit) {
	if rec == nil {
		return
	}
	g.forget(rec.Session)
	_ = g.env.Store.Git().Delete(ctx, rec.Session)
	if rec.Worktree != "" {
		if _, err := gitwork.RemoveWorktree(ctx, rec.WorktreeRoot, rec.Worktree, rec.Base); err != nil {
			g.log.Warn("remove the worktree of a session not created", "worktree", rec.Worktree, "err", err)
		}
	}
}

// record is a session's git record, nil when it has none.
func (g *gitDesk) record(ctx context.Context, session string) *store.SessionGit {
	g.mu.Lock()
	rec, ok := g.records[session]
	g.mu.Unlock()
	if ok {
		return rec
	}
	r, found, err := g.env.Store.Git().Get(ctx, session)
	if err != nil {
		g.log.Warn("read a session's git record", "session", session, "err", err)
		return nil
	}
	if found && r.DisposedAt.IsZero() {
		rec = &r
	}
	if _, live := g.cat.session(session); !live {
		return rec // not cached: the catalogue does not hold it
	}
	g.mu.Lock()
	g.records[session] = rec
	g.mu.Unlock()
	return rec
}

// forget drops what the desk holds of a session.
func (g *gitDesk) forget(session string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.records, session)
	delete(g.pending, session)
	var channels []string
	for ch := range g.watched[session] {
		channels = append(channels, ch)
	}
	delete(g.watched, session)
	return channels
}

// catalogueAtOpen is the changeset catalogue a stored session opens with.
func (g *gitDesk) catalogueAtOpen(ctx context.Context, session string) []ahp.Changeset {
	rec := g.record(ctx, session)
	if rec == nil {
		return nil
	}
	return sessionCatalogue(session, g.materialized(ctx, session), rec.Branch)
}

// materialized reports whether a turn of the session ran.
func (g *gitDesk) materialized(ctx context.Context, session string) bool {
	ok, err := g.env.Store.Git().HasTurns(ctx, session)
	return err == nil && ok
}

// onTurn snapshots a git session's work tree as a turn of one of its chats
// starts or ends; it runs on the chat's actor, before the turn's start is
// told (so before its backend is handed anything) and after its end.
func (g *gitDesk) onTurn(session, chatURI, turn string, start bool) {
	ctx, cancel := context.WithTimeout(context.Background(), turnSnapshotTimeout)
	defer cancel()
	rec := g.record(ctx, session)
	if rec == nil || turn == "" {
		return
	}
	snap, err := gitwork.Snapshot(ctx, rec.Dir)
	if err != nil {
		g.log.Warn("git session: snapshot of a turn", "session", session, "turn", turn, "start", start, "err", err)
		return
	}
	phase := "end"
	if start {
		phase = "start"
	}
	g.pin(ctx, rec, "turns/"+shortHash(turn)+"-"+phase, snap)
	if start {
		err = g.env.Store.Git().PutTurnStart(ctx, session, chatURI, turn, snap)
	} else {
		err = g.env.Store.Git().PutTurnEnd(ctx, session, turn, snap)
	}
	if err != nil {
		g.log.Error("git session: store a turn's snapshot", "session", session, "turn", turn, "err", err)
		return
	}
	if !start {
		g.refresh(session)
		return
	}
	// The session has run a turn now: its full catalogue is told before
	// the turn is (the session's mailbox keeps the order), so a client
	// that saw the turn end sees the catalogue.
	if s, ok := g.cat.session(session); ok {
		s.SetGitState(sessionCatalogue(session, true, rec.Branch), nil, nil)
	}
}

// opened queues a first refresh of a git session that just opened, so
// its git state (_meta.git) and changes summary are told without anyone
// subscribing to a changeset.
func (g *gitDesk) opened(ctx context.Context, session string) {
	if g.record(ctx, session) != nil {
		g.refresh(session)
	}
}

// pinPrefix is the folder of refs/ahpd/ that keeps a session's snapshots
// from git gc while the session lives (gitwork.Pin): a hash of the
// session's URI, which is a valid ref name whatever the URI holds.
func pinPrefix(session string) string { return "sessions/" + shortHash(session) }

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// pin keeps snapshot from git gc under the session's pins; a failure is
// logged (the snapshot lives two weeks unpinned).
func (g *gitDesk) pin(ctx context.Context, rec *store.SessionGit, name, snapshot string) {
	if err := gitwork.Pin(ctx, rec.Dir, pinPrefix(rec.Session)+"/"+name, snapshot); err != nil {
		g.log.Warn("git session: pin a snapshot", "session", rec.Session, "name", name, "err", err)
	}
}

// refresh queues a recomputation of the session's watched changesets, its
// catalogue and its changes summary, on the session's git lane; one queued
// takes every call made before it runs.
func (g *gitDesk) refresh(session string) {
	g.mu.Lock()
	if g.pending[session] || g.closed {
		g.mu.Unlock()
		return
	}
	g.pending[session] = true
	g.refreshing.Add(1)
	g.mu.Unlock()
	if !g.lanes.push(gitLane(session), func() { defer g.refreshing.Done(); g.recompute(session) }) {
		g.mu.Lock()
		delete(g.pending, session)
		g.mu.Unlock()
		g.refreshing.Done()
		g.log.Warn("git session: lanes full; its changesets refresh on its next change", "session", session)
	}
}

// close queues no more refreshes and waits, within ctx, for those queued
// or running to end (their git calls are bounded).
func (g *gitDesk) close(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.refreshing.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("git refreshes still running: %w", ctx.Err())
	}
}

// gitLane is the lane a session's refreshes run on (not a channel).
func gitLane(session string) string { return session + "/changeset" }

// recompute publishes each watched changeset of the session as the work
// tree now is (changeset/contentChanged, then changeset/statusChanged),
// and tells the session its catalogue and its branch's changes summary.
func (g *gitDesk) recompute(session string) {
	g.mu.Lock()
	delete(g.pending, session)
	var channels []string
	for ch := range g.watched[session] {
		channels = append(channels, ch)
	}
	g.mu.Unlock()
	slices.Sort(channels)
	ctx, cancel := context.WithTimeout(context.Background(), gitCallTimeout)
	defer cancel()
	rec := g.record(ctx, session)
	if rec == nil {
		return
	}
	for _, uri := range channels {
		ch, ok := changeset.ParseSessionChannel(uri)
		if !ok || g.bus.Subscribers(uri) == 0 {
			g.unwatch(session, uri)
			continue
		}
		st := g.compute(ctx, rec, ch)
		ops := st.Operations
		if ops == nil {
			ops = []ahp.ChangesetOperation{}
		}
		g.bus.Publish(uri, ahp.ChangesetContentChanged{Files: st.Files, Operations: &ops, Error: st.Error}, nil)
		g.bus.Publish(uri, ahp.ChangesetStatusChanged{Status: st.Status, Error: st.Error}, nil)
	}
	s, ok := g.cat.session(session)
	if !ok {
		return
	}
	var summary *ahp.ChangesSummary
	if changes, err := g.changes(ctx, rec, changeset.SessionChannel{Session: session, Kind: changeset.KindBranch}); err == nil {
		summary = summarize(changes)
	}
	s.SetGitState(sessionCatalogue(session, g.materialized(ctx, session), rec.Branch), g.gitMeta(ctx, rec), summary)
}

// gitMeta is the session's git state as VS Code's host carries it in
// SessionState._meta.git: its branch, the branch it was made from, its
// upstream and the commits between them, its uncommitted files.
func (g *gitDesk) gitMeta(ctx context.Context, rec *store.SessionGit) map[string]any {
	meta := map[string]any{}
	if b, err := gitwork.CurrentBranch(ctx, rec.Dir); err == nil && b != "" {
		meta["branchName"] = b
	} else if err == nil {
		meta["isDetachedHead"] = true
	}
	if rec.Worktree != "" {
		if base, err := gitwork.CurrentBranch(ctx, rec.SourceRepo); err == nil && base != "" {
			meta["baseBranchName"] = base
		}
	}
	if u, ok, err := gitwork.UpstreamOf(ctx, rec.Dir); err == nil && ok {
		meta["upstreamBranchName"] = u.Name
		meta["incomingChanges"] = float64(u.Behind)
		meta["outgoingChanges"] = float64(u.Ahead)
	}
	if changes, err := gitwork.Changes(ctx, rec.Dir, "HEAD"); err == nil {
		meta["uncommittedChanges"] = float64(len(changes))
	}
	return meta
}

// summarize is a changes summary of changes (listSessions' changes).
func summarize(changes []gitwork.Change) *ahp.ChangesSummary {
	var add, del int64
	for _, c := range changes {
		add += int64(c.Additions)
		del += int64(c.Deletions)
	}
	files := int64(len(changes))
	return &ahp.ChangesSummary{Additions: &add, Deletions: &del, Files: &files}
}

// watch keeps channel up to date from now on; false when the session
// watches too many already.
func (g *gitDesk) watch(session, channel string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.watched[session]
	if w == nil {
		w = map[string]bool{}
		g.watched[session] = w
	}
	if !w[channel] && len(w) >= maxWatchedChangesets {
		for ch := range w {
			if g.bus.Subscribers(ch) == 0 {
				delete(w, ch)
			}
		}
		if len(w) >= maxWatchedChangesets {
			return false
		}
	}
	w[channel] = true
	return true
}

func (g *gitDesk) unwatch(session, channel string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.watched[session], channel)
}

// changesetProblem is why a changeset cannot be computed that is no git
// failure: a turn or compare changeset naming a turn of which no snapshot
// was taken.
type changesetProblem struct{ info ahp.ErrorInfo }

func (p *changesetProblem) Error() string { return p.info.Message }

// changes lists what a session changeset holds, from git.
func (g *gitDesk) changes(ctx context.Context, rec *store.SessionGit, ch changeset.SessionChannel) ([]gitwork.Change, error) {
	turn := func(id string) (store.TurnSnapshot, error) {
		t, ok, err := g.env.Store.Git().Turn(ctx, rec.Session, id)
		if err == nil && !ok {
			err = &changesetProblem{ahp.ErrorInfo{ErrorType: "turnNotFound", Message: fmt.Sprintf("%s has no turn %s", rec.Session, id)}}
		}
		return t, err
	}
	switch ch.Kind {
	case changeset.KindUncommitted:
		return gitwork.Changes(ctx, rec.Dir, "HEAD")
	case changeset.KindBranch:
		return gitwork.Changes(ctx, rec.Dir, cmpOr(rec.Base, "HEAD"))
	case changeset.KindSession:
		return gitwork.Changes(ctx, rec.Dir, rec.Start)
	case changeset.KindTurn:
		t, err := turn(ch.Turn)
		if err != nil {
			return nil, err
		}
		if t.End == "" { // still running: up to now
			return gitwork.Changes(ctx, rec.Dir, t.Start)
		}
		return gitwork.ChangesBetween(ctx, rec.Dir, t.Start, t.End)
	case changeset.KindCompare:
		a, err := turn(ch.Original)
		if err != nil {
			return nil, err
		}
		b, err := turn(ch.Modified)
		if err != nil {
			return nil, err
		}
		return gitwork.ChangesBetween(ctx, rec.Dir, cmpOr(a.End, a.Start), cmpOr(b.End, b.Start))
	}
	return nil, fmt.Errorf("unknown changeset kind %q", ch.Kind)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// compute is a session changeset's state as the work tree now is.
func (g *gitDesk) compute(ctx context.Context, rec *store.SessionGit, ch changeset.SessionChannel) ahp.ChangesetState {
	changes, err := g.changes(ctx, rec, ch)
	if err != nil {
		info := ahp.ErrorInfo{ErrorType: "gitFailed", Message: err.Error()}
		var p *changesetProblem
		if errors.As(err, &p) {
			info = p.info
		}
		return ahp.ChangesetState{Status: ahp.ChangesetError, Error: &info, Files: []ahp.ChangesetFile{}}
	}
	reviewed, err := g.env.Store.Git().Reviewed(ctx, rec.Session)
	if err != nil {
		g.log.Warn("git session: read review marks", "session", rec.Session, "err", err)
	}
	st := ahp.ChangesetState{Status: ahp.ChangesetReady, Files: []ahp.ChangesetFile{}}
	for i, c := range changes {
		if i == maxChangesetFiles {
			break
		}
		st.Files = append(st.Files, g.file(rec, c, reviewed))
	}
	outgoing := 0
	if ch.Kind == changeset.KindUncommitted {
		if u, ok, err := gitwork.UpstreamOf(ctx, rec.Dir); err == nil && ok {
			outgoing = u.Ahead
		}
	}
	st.Operations = sessionOperations(ch.Kind, len(st.Files), outgoing)
	return st
}

// file is one changed file as a changeset lists it: its id is the file's
// URI in the work tree, each side points at its git blob.
func (g *gitDesk) file(rec *store.SessionGit, c gitwork.Change, reviewed map[string]bool) ahp.ChangesetFile {
	abs := func(rel string) string { return filepath.Join(rec.Dir, filepath.FromSlash(rel)) }
	side := func(path, blob string) map[string]any {
		content := map[string]any{"uri": ahp.FileURI(path)}
		if blob != "" && c.NewMode != "160000" && c.OldMode != "160000" {
			content = map[string]any{"uri": changeset.GitContentURI(rec.Session, blob), "contentType": "text/plain"}
		}
		return map[string]any{"uri": ahp.FileURI(path), "content": content}
	}
	id := ahp.FileURI(abs(c.Path))
	edit := map[string]any{}
	if c.Kind != gitwork.Added {
		edit["before"] = side(abs(cmpOr(c.OldPath, c.Path)), c.OldBlob)
	}
	if c.Kind != gitwork.Deleted {
		edit["after"] = side(abs(c.Path), c.NewBlob)
	}
	if !c.Binary {
		edit["diff"] = map[string]int{"added": c.Additions, "removed": c.Deletions}
	}
	raw, _ := json.Marshal(edit)
	r := reviewed[id]
	f := ahp.ChangesetFile{ID: id, Edit: raw, Reviewed: &r, Meta: map[string]any{"ahpd.kind": string(c.Kind)}}
	if c.Binary {
		f.Meta["ahpd.binary"] = true
	}
	return f
}

// exists says whether a session changeset channel's session is a live git
// session (reconnect).
func (g *gitDesk) exists(ctx context.Context, ch changeset.SessionChannel) bool {
	if _, ok := g.cat.session(ch.Session); !ok {
		return false
	}
	return g.record(ctx, ch.Session) != nil
}

// dispose ends what a disposed session had in git: a worktree of its own
// is removed when nothing would be lost, and kept (and recorded, for ahpd
// worktrees) when it holds changes or commits no other branch has.
func (g *gitDesk) dispose(ctx context.Context, session string) {
	for _, ch := range g.forget(session) {
		g.bus.DropChannel(ch)
	}
	r, found, err := g.env.Store.Git().Get(ctx, session)
	if err != nil || !found {
		return
	}
	// A refresh still queued or running on the session's git lane runs git
	// in its work tree (reading its changes writes objects): the work tree
	// is touched only after it (its git calls are bounded too).
	drainCtx, stopDrain := context.WithTimeout(ctx, gitCallTimeout)
	if !g.lanes.drain(drainCtx, gitLane(session)) {
		g.log.Warn("dispose session: its git refresh did not end in time", "session", session)
	}
	stopDrain()
	ctx, cancel := context.WithTimeout(ctx, gitCallTimeout)
	defer cancel()
	if dirExists(r.Dir) {
		if _, err := gitwork.UnpinAll(ctx, r.Dir, pinPrefix(session)); err != nil {
			g.log.Warn("dispose session: unpin its snapshots", "session", session, "err", err)
		}
	}
	if r.Worktree == "" {
		if err := g.env.Store.Git().Delete(ctx, session); err != nil {
			g.log.Warn("forget a disposed session's git record", "session", session, "err", err)
		}
		return
	}
	removal, err := gitwork.RemoveWorktree(ctx, r.WorktreeRoot, r.Worktree, r.Base)
	switch {
	case err != nil:
		g.log.Warn("dispose session: worktree kept", "session", session, "worktree", r.Worktree, "err", err)
		err = g.env.Store.Git().Disposed(ctx, session, "error: "+err.Error(), g.env.Now())
	case removal.Removed:
		g.log.Info("dispose session: worktree removed", "session", session, "worktree", r.Worktree, "branchDeleted", removal.BranchDeleted)
		err = g.env.Store.Git().Delete(ctx, session)
	default:
		g.log.Info("dispose session: worktree kept", "session", session, "worktree", r.Worktree, "why", removal.Kept)
		err = g.env.Store.Git().Disposed(ctx, session, removal.Kept, g.env.Now())
	}
	if err != nil {
		g.log.Error("dispose session: record its worktree", "session", session, "err", err)
	}
}

// dirExists reports whether path is a directory now.
func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
