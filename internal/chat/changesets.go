package chat

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/changeset"
	"github.com/ahpd/ahpd/internal/confine"
	"github.com/ahpd/ahpd/internal/store"
)

// The chat's changesets (C-TURN-19): what its agent changed on disk, per
// turn. A file-changing call's file is read when its input is complete
// (the call cannot have run yet where the backend asks before it edits)
// and again when the call is done, or, for a call that never reports done
// (a stop), when the backend says it is done with the call's turn. What
// differs is stored, then published on the turn's changeset channel and
// on the chat's. The engine drops a stopped turn's late events (C-TURN-15);
// this record takes them, under the turn they name.

// Changeset operation ids: keep marks files reviewed, undo restores their
// contents from before the turn.
const (
	OpKeep = "keep"
	OpUndo = "undo"
)

// changeCapture is one file-changing call seen ready and not yet done.
type changeCapture struct {
	turn, call, tool, path string
	before                 fileSide
}

// fileSide is a file as read at one moment.
type fileSide struct {
	exists bool
	data   []byte // nil when absent or not kept
	// skipped says why data was not kept; size and mod are then the
	// fingerprint a later read is compared with.
	skipped string
	size    int64
	mod     time.Time
}

func (a fileSide) same(b fileSide) bool {
	if a.exists != b.exists {
		return false
	}
	if !a.exists {
		return true
	}
	if a.skipped != "" || b.skipped != "" {
		return a.skipped == b.skipped && a.size == b.size && a.mod.Equal(b.mod)
	}
	return bytes.Equal(a.data, b.data)
}

// hash names data as kept ("" when absent or skipped).
func (a fileSide) hash() string {
	if !a.exists || a.skipped != "" {
		return ""
	}
	return store.ContentHash(a.data)
}

// changesets is the chat's changeset bookkeeping: the files of the
// file-changing calls it read before they ran, what it stored of what they
// changed, and the changeset channels that show it and keep or undo it.
// It is part of the chat actor and runs only on the actor's goroutine.
type changesets struct {
	c *Chat
	// open holds the captures of calls seen ready and not yet settled.
	open map[captureKey]*changeCapture
	// first is each file as the running turn first found it, keyed
	// {turn, path}; a record's before is it, not a later call's own
	// before: a file a call changes and a later call restores, both run
	// before the first settles, would otherwise be listed changed from the
	// later call's before. Dropped as the turn ends.
	first map[captureKey]fileSide
}

// captureKey is one file of one call (an ACP call may name several).
type captureKey struct{ call, path string }

// track takes one agent event into the changeset record.
func (cs *changesets) track(ev agent.Event) {
	if cs.c.cfg.GitChangesets {
		return // the session's changesets, from git, hold every change
	}
	switch ev.Kind {
	case agent.EventToolReady:
		if ev.ToolCall != nil {
			cs.captureBefore(ev.TurnID, ev.ToolCall)
		}
	case agent.EventToolDone:
		if ev.ToolCall != nil {
			cs.settleWhere(func(cp *changeCapture) bool { return cp.call == ev.ToolCall.ID })
		}
	case agent.EventTurnEnd:
		cs.settle(ev.TurnID)
		for k := range cs.first {
			if k.call == ev.TurnID {
				delete(cs.first, k)
			}
		}
	}
}

// captureBefore reads the files a call is about to change. A path outside
// the chat's directories is not recorded: the host never writes there.
func (cs *changesets) captureBefore(turn string, tc *agent.ToolCall) {
	if turn == "" || tc.ID == "" {
		return
	}
	for k := range cs.open {
		if k.call == tc.ID {
			return // ready said again (a permission ask after the stream's)
		}
	}
	var paths []string
	if p, ok := changeset.Target(tc.Name, tc.Input); ok {
		paths = []string{p}
	}
	if changeset.ChangesFiles(tc.Name) && len(tc.Paths) > 0 {
		paths = tc.Paths // what the backend says the call touches
	}
	for _, p := range paths {
		cs.captureFile(turn, tc, p)
	}
}

func (cs *changesets) captureFile(turn string, tc *agent.ToolCall, p string) {
	c := cs.c
	path, err := cs.confinedPath(p)
	if err != nil {
		c.log.Info("changeset: a call names a file outside the chat's directories", "call", tc.ID, "path", p, "err", err)
		return
	}
	if cs.open == nil {
		cs.open = make(map[captureKey]*changeCapture)
	}
	key := captureKey{tc.ID, path}
	if cs.open[key] != nil {
		return
	}
	before := readSide(path)
	if b := tc.Before; b != nil && b.Path == path && (b.Data != nil || !b.Exists) {
		// The backend read it just before its own edit ran: exact, where
		// the read above may come after the edit.
		before = fileSide{exists: b.Exists}
		if b.Exists {
			before.data, before.size = b.Data, int64(len(b.Data))
			if before.skipped = changeset.Skip(b.Data); before.skipped != "" {
				before.data = nil
			}
		}
	}
	if cs.first == nil {
		cs.first = make(map[captureKey]fileSide)
	}
	if fk := (captureKey{turn, path}); !hasKey(cs.first, fk) {
		cs.first[fk] = before
	}
	cs.open[key] = &changeCapture{turn: turn, call: tc.ID, tool: tc.Name, path: path, before: before}
}

// confinedPath resolves p (relative to the chat's first directory) inside
// the chat's directories.
func (cs *changesets) confinedPath(p string) (string, error) {
	c := cs.c
	if !filepath.IsAbs(p) {
		if len(c.cfg.Directories) == 0 {
			return "", fmt.Errorf("%s: relative, and the chat has no directory", p)
		}
		p = filepath.Join(c.cfg.Directories[0], p)
	}
	return confine.ResolveNew(p, c.cfg.Directories)
}

// settle settles every open capture of turn ("" every turn's).
func (cs *changesets) settle(turn string) {
	cs.settleWhere(func(cp *changeCapture) bool { return turn == "" || cp.turn == turn })
}

// settleWhere settles the open captures match picks, in a stable order.
func (cs *changesets) settleWhere(match func(*changeCapture) bool) {
	var caps []*changeCapture
	for _, cp := range cs.open {
		if match(cp) {
			caps = append(caps, cp)
		}
	}
	slices.SortFunc(caps, func(a, b *changeCapture) int {
		return cmp.Or(strings.Compare(a.call, b.call), strings.Compare(a.path, b.path))
	})
	for _, cp := range caps {
		cs.settleChange(cp)
	}
}

// settleChange reads the file again and records what changed, stored
// before it is published.
func (cs *changesets) settleChange(cp *changeCapture) {
	c := cs.c
	delete(cs.open, captureKey{cp.call, cp.path})
	after := readSide(cp.path)
	if cp.before.same(after) {
		return // this call changed nothing
	}
	before := cp.before
	if fb, ok := cs.first[captureKey{cp.turn, cp.path}]; ok {
		before = fb // as the turn first found the file
	}
	f := store.ChangesetFile{
		Chat: c.cfg.URI, Turn: cp.turn, Path: cp.path, ToolCall: cp.call, Tool: cp.tool,
		BeforeExists: before.exists, BeforeHash: before.hash(),
		AfterExists: after.exists, AfterHash: after.hash(),
	}
	f.Skipped = cmp.Or(before.skipped, after.skipped)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f.Skipped == "" {
		// Count from the turn's first before: an earlier change of the
		// turn may have stored one.
		first, err := cs.turnFirstBefore(ctx, cp)
		if err != nil {
			c.log.Error("changeset: read the turn's record of a file", "path", cp.path, "err", err)
			return
		}
		f.Added, f.Removed = changeset.Diff(first, after.data)
	}
	var beforeData, afterData []byte
	if f.BeforeHash != "" {
		beforeData = before.data
	}
	if f.AfterHash != "" {
		afterData = after.data
	}
	stored, err := c.cfg.Env.Store.Changesets().PutFile(ctx, f, beforeData, afterData)
	if err != nil {
		c.log.Error("changeset: store a changed file", "path", cp.path, "turn", cp.turn, "err", err)
		return
	}
	if stored.Skipped == "" && stored.BeforeExists == stored.AfterExists && stored.BeforeHash == stored.AfterHash {
		// The turn put the file back as it found it (made and removed,
		// changed and restored): no change is left to list.
		cs.forgetUndone(ctx, changeset.TurnURI(c.cfg.URI, stored.Turn), stored.Turn, []string{stored.Path})
		return
	}
	cs.catalogue()
	c.cfg.Env.Bus.Publish(changeset.TurnURI(c.cfg.URI, stored.Turn), ahp.ChangesetFileSet{File: cs.file(stored)}, nil)
	cs.publishChatWide(ctx, stored.Path)
}

// turnFirstBefore is the contents cp's file had before its turn first
// changed it: what the turn's record holds, else cp's own read.
func (cs *changesets) turnFirstBefore(ctx context.Context, cp *changeCapture) ([]byte, error) {
	c := cs.c
	files, err := c.cfg.Env.Store.Changesets().Files(ctx, c.cfg.URI, cp.turn)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(files, func(f store.ChangesetFile) bool { return f.Path == cp.path })
	if i < 0 {
		return cp.before.data, nil
	}
	if f := files[i]; f.BeforeHash != "" {
		data, _, err := c.cfg.Env.Store.Changesets().Content(ctx, c.cfg.URI, f.BeforeHash)
		return data, err
	}
	return nil, nil
}

// readSide reads path as it is now, bounded.
func readSide(path string) fileSide {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileSide{}
	}
	if err != nil {
		return fileSide{exists: true, skipped: "unreadable"}
	}
	s := fileSide{exists: true, size: info.Size(), mod: info.ModTime()}
	if !info.Mode().IsRegular() {
		s.skipped = "not a regular file"
		return s
	}
	if info.Size() > changeset.MaxFileBytes {
		s.skipped = changeset.SkipTooLarge
		return s
	}
	f, err := os.Open(path)
	if err != nil {
		s.skipped = "unreadable"
		return s
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, changeset.MaxFileBytes+1))
	if err != nil {
		s.skipped = "unreadable"
		return s
	}
	if s.skipped = changeset.Skip(data); s.skipped == "" {
		s.data = data
		if s.data == nil {
			s.data = []byte{}
		}
	}
	return s
}

// catalogue lists the chat's changesets in its state, once it has
// changed a file (a chat that changed none shows no catalogue).
func (cs *changesets) catalogue() {
	c := cs.c
	if len(c.st().Changesets) > 0 {
		return
	}
	c.apply(ahp.ChatChangesetsChanged{Changesets: ChangesetCatalogue(c.cfg.URI)}, nil)
}

// ChangesetCatalogue is chat's ChatState.changesets: one per turn and the
// whole chat's.
func ChangesetCatalogue(chat string) []ahp.Changeset {
	return []ahp.Changeset{
		{Label: "This Turn", Description: "Files this turn changed", URITemplate: changeset.TurnTemplate(chat), ChangeKind: changeset.KindTurn},
		{Label: "Chat Changes", Description: "Files this chat changed", URITemplate: changeset.ChatURI(chat), ChangeKind: changeset.KindChat},
	}
}

// file is a stored file as the channel shows it: a FileEdit whose
// sides point at the kept contents.
func (cs *changesets) file(f store.ChangesetFile) ahp.ChangesetFile {
	c := cs.c
	uri := ahp.FileURI(f.Path)
	side := func(hash string) map[string]any {
		ref := map[string]any{"uri": uri} // not kept: the file itself
		if hash != "" {
			ref = map[string]any{"uri": changeset.ContentURI(c.cfg.URI, hash), "contentType": "text/plain"}
		}
		return map[string]any{"uri": uri, "content": ref}
	}
	edit := map[string]any{}
	if f.BeforeExists && (f.BeforeHash != "" || !f.AfterExists) {
		edit["before"] = side(f.BeforeHash)
	}
	if f.AfterExists {
		edit["after"] = side(f.AfterHash)
	}
	if f.Skipped == "" {
		edit["diff"] = map[string]int{"added": f.Added, "removed": f.Removed}
	}
	raw, _ := json.Marshal(edit)
	reviewed := f.Reviewed
	out := ahp.ChangesetFile{ID: uri, Edit: raw, Reviewed: &reviewed,
		Meta: map[string]any{"ahpd.turnId": f.Turn, "ahpd.toolCallId": f.ToolCall, "ahpd.tool": f.Tool}}
	if f.Skipped != "" {
		out.Meta["ahpd.skipped"] = f.Skipped
	}
	return out
}

// chatWide merges the turns' records of each file: the first turn's
// before, the last's after.
func chatWide(files []store.ChangesetFile) []store.ChangesetFile {
	var out []store.ChangesetFile
	at := map[string]int{}
	for _, f := range files {
		i, ok := at[f.Path]
		if !ok {
			at[f.Path] = len(out)
			out = append(out, f)
			continue
		}
		m := &out[i]
		m.Turn, m.ToolCall, m.Tool = f.Turn, f.ToolCall, f.Tool
		m.AfterExists, m.AfterHash = f.AfterExists, f.AfterHash
		m.Reviewed = m.Reviewed && f.Reviewed
		m.Skipped = cmp.Or(m.Skipped, f.Skipped)
	}
	return out
}

// chatWideFiles reads the chat's merged files, with line counts from the
// first before to the last after.
func (cs *changesets) chatWideFiles(ctx context.Context, path string) ([]store.ChangesetFile, error) {
	c := cs.c
	all, err := c.cfg.Env.Store.Changesets().Files(ctx, c.cfg.URI, "")
	if err != nil {
		return nil, err
	}
	if path != "" {
		all = slices.DeleteFunc(all, func(f store.ChangesetFile) bool { return f.Path != path })
	}
	merged := chatWide(all)
	for i := range merged {
		m := &merged[i]
		if m.Skipped != "" {
			continue
		}
		var before, after []byte
		if m.BeforeHash != "" {
			before, _, _ = c.cfg.Env.Store.Changesets().Content(ctx, c.cfg.URI, m.BeforeHash)
		}
		if m.AfterHash != "" {
			after, _, _ = c.cfg.Env.Store.Changesets().Content(ctx, c.cfg.URI, m.AfterHash)
		}
		m.Added, m.Removed = changeset.Diff(before, after)
	}
	return merged, nil
}

// publishChatWide publishes path's entry of the chat's changeset.
func (cs *changesets) publishChatWide(ctx context.Context, path string) {
	c := cs.c
	merged, err := cs.chatWideFiles(ctx, path)
	if err != nil {
		c.log.Warn("changeset: read the chat's files", "err", err)
		return
	}
	ch := changeset.ChatURI(c.cfg.URI)
	if len(merged) == 0 {
		c.cfg.Env.Bus.Publish(ch, ahp.ChangesetFileRemoved{FileID: ahp.FileURI(path)}, nil)
		return
	}
	c.cfg.Env.Bus.Publish(ch, ahp.ChangesetFileSet{File: cs.file(merged[0])}, nil)
}

// turnOperations are what a turn's changeset offers.
func turnOperations() []ahp.ChangesetOperation {
	both := []string{"changeset", "resource"}
	confirm, _ := json.Marshal("Undo restores the contents these files had before the turn.")
	return []ahp.ChangesetOperation{
		{ID: OpKeep, Label: "Keep", Description: "Keep these changes", Scopes: both, Icon: "check", Status: "idle"},
		{ID: OpUndo, Label: "Undo", Description: "Restore the contents from before the turn", Scopes: both, Confirmation: confirm, Icon: "discard", Status: "idle"},
	}
}

// knowsTurn reports whether turn is one of the chat's.
func (cs *changesets) knowsTurn(turn string) bool {
	c := cs.c
	st := c.st()
	if st.ActiveTurn != nil && st.ActiveTurn.ID == turn {
		return true
	}
	if slices.ContainsFunc(st.Turns, func(t ahp.Turn) bool { return t.ID == turn }) {
		return true
	}
	_, ok := c.window.olderTurn(turn)
	return ok
}

// SubscribeChangeset answers a subscription to one of the chat's changeset
// channels and adds the subscriber in the same step. An unknown turn's
// changeset is in error, as VS Code's host answers one.
func (c *Chat) SubscribeChangeset(ctx context.Context, sub bus.Subscriber, uri string, ch changeset.Channel) (ahp.Snapshot, error) {
	var snap ahp.Snapshot
	var ferr error
	err := c.call(ctx, func() { snap, ferr = c.changesets.subscribe(ctx, sub, uri, ch) })
	if err == nil {
		err = ferr
	}
	if err != nil {
		return ahp.Snapshot{}, fmt.Errorf("subscribe %s: %w", uri, err)
	}
	return snap, nil
}

// subscribe is SubscribeChangeset on the actor: the channel's snapshot,
// with sub added to the channel.
func (cs *changesets) subscribe(ctx context.Context, sub bus.Subscriber, uri string, ch changeset.Channel) (ahp.Snapshot, error) {
	c := cs.c
	var files []store.ChangesetFile
	var err error
	if ch.Turn == "" {
		files, err = cs.chatWideFiles(ctx, "")
	} else {
		files, err = c.cfg.Env.Store.Changesets().Files(ctx, c.cfg.URI, ch.Turn)
	}
	if err != nil {
		return ahp.Snapshot{}, err
	}
	st := ahp.ChangesetState{Status: ahp.ChangesetReady, Files: []ahp.ChangesetFile{}}
	for _, f := range files {
		st.Files = append(st.Files, cs.file(f))
	}
	if ch.Turn != "" {
		if len(files) == 0 && !cs.knowsTurn(ch.Turn) {
			st.Status = ahp.ChangesetError
			st.Error = &ahp.ErrorInfo{ErrorType: "turnNotFound", Message: fmt.Sprintf("%s has no turn %s", c.cfg.URI, ch.Turn)}
		} else {
			st.Operations = turnOperations()
		}
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return ahp.Snapshot{}, err
	}
	seq := c.cfg.Env.Bus.Subscribe(sub, uri)
	return ahp.Snapshot{Resource: uri, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// ChangesetTarget is invokeChangesetOperation's target.
type ChangesetTarget struct {
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
}

// InvokeChangesetOperation runs operation op of the changeset on channel
// uri: keep marks files reviewed, undo restores them. Its progress is
// published as the operation's status (running, then idle or error).
func (c *Chat) InvokeChangesetOperation(ctx context.Context, uri string, ch changeset.Channel, op string, target *ChangesetTarget) (string, error) {
	var msg string
	var opErr error
	err := c.call(ctx, func() { msg, opErr = c.changesets.invoke(ctx, uri, ch, op, target) })
	if err == nil {
		err = opErr
	}
	return msg, err
}

func (cs *changesets) invoke(ctx context.Context, uri string, ch changeset.Channel, op string, target *ChangesetTarget) (string, error) {
	c := cs.c
	if ch.Turn == "" || (op != OpKeep && op != OpUndo) {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "params.operationId: %s offers no operation %q", uri, op)
	}
	files, err := c.cfg.Env.Store.Changesets().Files(ctx, c.cfg.URI, ch.Turn)
	if err != nil {
		return "", err
	}
	if target != nil {
		if target.Kind != "resource" {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "params.target.kind: %s takes a resource or no target, not %q", op, target.Kind)
		}
		files = slices.DeleteFunc(files, func(f store.ChangesetFile) bool { return ahp.FileURI(f.Path) != target.Resource })
		if len(files) == 0 {
			return "", ahp.Errorf(ahp.ErrInvalidParams, "params.target.resource: %s is not a file of %s", target.Resource, uri)
		}
	}
	if len(files) == 0 {
		return "", ahp.Errorf(ahp.ErrInvalidParams, "%s has no files to %s", uri, op)
	}
	c.cfg.Env.Bus.Publish(uri, ahp.ChangesetOperationStatusChanged{OperationID: op, Status: "running"}, nil)
	var msg string
	if op == OpKeep {
		msg, err = cs.keep(ctx, uri, ch.Turn, files)
	} else {
		msg, err = cs.undo(ctx, uri, ch.Turn, files)
	}
	if err != nil {
		c.cfg.Env.Bus.Publish(uri, ahp.ChangesetOperationStatusChanged{OperationID: op, Status: ahp.ChangesetError,
			Error: &ahp.ErrorInfo{ErrorType: op + "Failed", Message: err.Error()}}, nil)
		return "", err
	}
	c.cfg.Env.Bus.Publish(uri, ahp.ChangesetOperationStatusChanged{OperationID: op, Status: "idle"}, nil)
	return msg, nil
}

func (cs *changesets) keep(ctx context.Context, uri, turn string, files []store.ChangesetFile) (string, error) {
	c := cs.c
	var paths, ids []string
	for _, f := range files {
		paths, ids = append(paths, f.Path), append(ids, ahp.FileURI(f.Path))
	}
	if err := c.cfg.Env.Store.Changesets().SetReviewed(ctx, c.cfg.URI, turn, paths, true); err != nil {
		return "", err
	}
	c.cfg.Env.Bus.Publish(uri, ahp.ChangesetFilesReviewChanged{Files: ids, Reviewed: true}, nil)
	for _, p := range paths {
		cs.publishChatWide(ctx, p)
	}
	return fmt.Sprintf("Kept %d file(s).", len(files)), nil
}

// undo restores files to their contents from before the turn, all or
// none: a file changed since the turn, one whose contents were not kept and
// one outside the chat's directories refuse the whole undo, named.
func (cs *changesets) undo(ctx context.Context, uri, turn string, files []store.ChangesetFile) (string, error) {
	c := cs.c
	var changed, unkept, outside []string
	befores := make([][]byte, len(files))
	for i, f := range files {
		if f.Skipped != "" || (f.BeforeExists && f.BeforeHash == "") || (f.AfterExists && f.AfterHash == "") {
			unkept = append(unkept, f.Path)
			continue
		}
		if _, err := confine.ResolveNew(f.Path, c.cfg.Directories); err != nil {
			outside = append(outside, f.Path)
			continue
		}
		now := readSide(f.Path)
		if now.exists != f.AfterExists || (now.exists && now.hash() != f.AfterHash) {
			changed = append(changed, f.Path)
			continue
		}
		if f.BeforeExists {
			data, ok, err := c.cfg.Env.Store.Changesets().Content(ctx, c.cfg.URI, f.BeforeHash)
			if err != nil {
				return "", err
			}
			if !ok {
				unkept = append(unkept, f.Path)
				continue
			}
			befores[i] = data
		}
	}
	switch {
	case len(changed) > 0:
		return "", ahp.WithData(ahp.Errorf(ahp.ErrConflict, "undo refused: changed since the turn: %s", strings.Join(changed, ", ")), map[string]any{"changed": changed})
	case len(outside) > 0:
		return "", ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "undo refused: outside the chat's directories: %s", strings.Join(outside, ", ")), map[string]any{"outside": outside})
	case len(unkept) > 0:
		return "", ahp.WithData(ahp.Errorf(ahp.ErrConflict, "undo refused: contents not kept: %s", strings.Join(unkept, ", ")), map[string]any{"unkept": unkept})
	}
	var done []string
	for i, f := range files {
		var err error
		if f.BeforeExists {
			err = writeFileAtomic(f.Path, befores[i])
		} else {
			err = os.Remove(f.Path)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			cs.forgetUndone(ctx, uri, turn, done)
			return "", fmt.Errorf("undo %s: %w (undone before it: %d)", f.Path, err, len(done))
		}
		done = append(done, f.Path)
	}
	cs.forgetUndone(ctx, uri, turn, done)
	return fmt.Sprintf("Undid %d file(s).", len(done)), nil
}

// forgetUndone drops files from the turn's changeset (undone, or put back
// by the turn itself): stored, then published on the turn's channel and
// the chat's.
func (cs *changesets) forgetUndone(ctx context.Context, uri, turn string, paths []string) {
	c := cs.c
	if len(paths) == 0 {
		return
	}
	if err := c.cfg.Env.Store.Changesets().RemoveFiles(ctx, c.cfg.URI, turn, paths); err != nil {
		c.log.Error("changeset: forget undone files", "err", err)
		return
	}
	for _, p := range paths {
		c.cfg.Env.Bus.Publish(uri, ahp.ChangesetFileRemoved{FileID: ahp.FileURI(p)}, nil)
		cs.publishChatWide(ctx, p)
	}
}

// writeFileAtomic replaces path's contents: a temporary file beside it,
// renamed over it, so a reader never sees half the contents.
func writeFileAtomic(path string, data []byte) error {
	mode := fs.FileMode(0o644)
	if info, err := os.Lstat(path); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".ahpd-undo-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// restore lists the catalogue of a chat that changed files
// before the daemon restarted.
func (cs *changesets) restore(ctx context.Context, st *ahp.ChatState) error {
	c := cs.c
	has, err := c.cfg.Env.Store.Changesets().HasFiles(ctx, c.cfg.URI)
	if err != nil {
		return err
	}
	if has {
		st.Changesets = ChangesetCatalogue(c.cfg.URI)
	}
	return nil
}

func hasKey[K comparable, V any](m map[K]V, k K) bool { _, ok := m[k]; return ok }
