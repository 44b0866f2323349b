package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/confine"
	"github.com/ahpd/ahpd/internal/hosttools"
	"github.com/ahpd/ahpd/internal/session"
	"github.com/ahpd/ahpd/internal/sessionconfig"
	"github.com/google/uuid"
)

// The create_session tool (issue 33 §5; VS Code's sessionServerTools):
// an agent delegates work, as its session's owner, to a new chat of its
// session or to a session of its own beside it, in a git worktree of its
// own when it asks. The new session is an ordinary one: listed, open to
// its owner's clients, and disposed like any other (its worktree removed
// then only when nothing would be lost). What it was made from is kept in
// its record and shown in its state's _meta (session.CreatedByKey).

// Bounds of delegation.
const (
	// maxSpawnDepth bounds a chain of sessions each made by the one
	// before: a session made at this depth may not make another.
	maxSpawnDepth = 3
	// maxSpawnsPerSession bounds the chats and sessions one session's
	// agents make while the daemon runs.
	maxSpawnsPerSession = 25
	// maxSpawnCounts bounds the sessions whose spawns are counted (a
	// disposed session's count goes with it).
	maxSpawnCounts = 4096
)

// CreateSession starts delegated work for an agent's create_session call.
func (h *Host) CreateSession(ctx context.Context, caller hosttools.Caller, d hosttools.Delegation) (string, error) {
	return h.tools.createSession(ctx, caller, d)
}

// principalNamed is who sender (a session's owner, a bot's or an
// automation's) is: the deployment for a root reference, else the
// principal of a configured token that names it.
func principalNamed(principals map[string]auth.Principal, sender string) (auth.Principal, bool) {
	if strings.HasPrefix(sender, "root:") {
		return auth.Principal{Sender: sender, Grants: []string{"*"}}, true
	}
	for _, p := range principals {
		if p.Sender == sender {
			return p, true
		}
	}
	return auth.Principal{}, false
}

// chatClientOf is principal as the sender of the host's own dispatch.
func chatClientOf(p auth.Principal) chat.Client {
	if strings.HasPrefix(p.Sender, "root:") {
		return chat.Client{Sender: p.Sender, Root: true}
	}
	return chat.Client{Sender: p.Sender, Can: p.Can}
}

func (d *toolDesk) createSession(ctx context.Context, caller hosttools.Caller, del hosttools.Delegation) (string, error) {
	rec, found, err := d.env.Store.Session(ctx, caller.Session)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, caller.Session)
	}
	principal, ok := principalNamed(d.principals, rec.Owner)
	if !ok {
		return "", fmt.Errorf("this session's owner %q is nobody this daemon knows", rec.Owner)
	}
	meta := session.ParseRecordMeta(rec.Meta)
	if meta.CreatedBy != nil && meta.CreatedBy.Depth >= maxSpawnDepth {
		return "", fmt.Errorf("this session was itself delegated %d deep; delegate no further", meta.CreatedBy.Depth)
	}
	if err := d.countSpawn(caller.Session); err != nil {
		return "", err
	}
	by := &session.CreatedBy{Session: caller.Session, Chat: caller.Chat, Depth: 1}
	if meta.CreatedBy != nil {
		by.Depth = meta.CreatedBy.Depth + 1
	}
	cl := chatClientOf(principal)
	cl.ID = "create_session:" + caller.Chat
	cl.Sub = refusalLog{log: d.log, id: cl.ID, what: "a delegated prompt"}
	msg := ahp.Message{Text: del.Prompt, Origin: ahp.MessageOrigin{Kind: ahp.MessageFromAgent}}
	if del.Relationship == hosttools.RelationshipCurrentSession {
		return d.newChat(ctx, principal, cl, caller, del, msg)
	}
	return d.newSession(ctx, principal, cl, rec.Provider, rec.WorkingDirectories, meta.Sandbox, caller, by, del, msg)
}

// countSpawn counts one more delegation of session's agents, or refuses it.
func (d *toolDesk) countSpawn(session string) error {
	d.spawnMu.Lock()
	defer d.spawnMu.Unlock()
	n, known := d.spawned[session]
	switch {
	case !known && len(d.spawned) >= maxSpawnCounts:
		return errors.New("too many sessions are delegating work; try again later")
	case n >= maxSpawnsPerSession:
		return fmt.Errorf("this session has already delegated %d times; no more", n)
	}
	d.spawned[session] = n + 1
	return nil
}

// forgetSpawns drops a disposed session's count of delegations.
func (d *toolDesk) forgetSpawns(session string) {
	d.spawnMu.Lock()
	delete(d.spawned, session)
	d.spawnMu.Unlock()
}

// newChat is a new chat of the caller's session, titled and started with
// the prompt.
func (d *toolDesk) newChat(ctx context.Context, principal auth.Principal, cl chat.Client, caller hosttools.Caller, del hosttools.Delegation, msg ahp.Message) (string, error) {
	if !principal.Can(auth.ChatCreate) {
		return "", fmt.Errorf("this session's owner may not create chats (%s)", auth.ChatCreate)
	}
	uri := ahp.OpaqueChatURI(uuid.NewString())
	p := ahp.CreateChatParams{Channel: caller.Session, Chat: uri}
	found, err := d.cat.onSession(ctx, caller.Session, func(s *session.Session) error { return s.CreateChat(ctx, p, cl) })
	if !found {
		return "", fmt.Errorf("%s: %s", ahp.ErrResourceNotFound.Message, caller.Session)
	}
	if err != nil {
		return "", err
	}
	if err := d.start(ctx, cl, uri, del.Title, msg); err != nil {
		return "", err
	}
	return fmt.Sprintf("Chat created in the current session (%s); it is working on the prompt.", uri), nil
}

// newSession is a session beside the caller's, on the same agent, in the
// workspace (or the caller's folder), in a worktree of its own when asked,
// and as confined as the caller's: a sandboxed session's delegate works
// only inside the caller's folders, under the same sandbox.
func (d *toolDesk) newSession(ctx context.Context, principal auth.Principal, cl chat.Client, provider string, callerDirs []string, sandboxMode string,
	caller hosttools.Caller, by *session.CreatedBy, del hosttools.Delegation, msg ahp.Message) (string, error) {
	var roots []string
	for _, u := range callerDirs {
		if p, err := ahp.LocalPath(u); err == nil {
			roots = append(roots, p)
		}
	}
	dir := ""
	if len(roots) > 0 {
		dir = roots[0]
	}
	if w := del.Workspace; w != "" {
		if strings.HasPrefix(w, "file:") {
			p, err := ahp.LocalPath(w)
			if err != nil {
				return "", fmt.Errorf("workspace: %v", err)
			}
			w = p
		}
		if !filepath.IsAbs(w) {
			return "", fmt.Errorf("workspace %q is not an absolute path", del.Workspace)
		}
		dir = filepath.Clean(w)
	}
	if dir == "" {
		return "", errors.New("this session has no folder; name a workspace")
	}
	if sandboxMode != "" && sandboxMode != "off" {
		if _, err := confine.Resolve(dir, roots); err != nil {
			return "", fmt.Errorf("workspace %s: this session is sandboxed (%s); its delegate works inside its folders only", dir, sandboxMode)
		}
	}
	config := map[string]any{}
	if del.Worktree {
		config[sessionconfig.KeyIsolation] = sessionconfig.IsolationWorktree
	}
	if sandboxMode != "" {
		config[sessionconfig.KeySandbox] = sandboxMode
	}
	scheme := ahp.SessionProviderScheme(caller.Session)
	if scheme == "" {
		scheme = ahp.SessionScheme
	}
	uri := scheme + ":/" + uuid.NewString()
	p := ahp.CreateSessionParams{Channel: uri, Provider: provider, WorkingDirectories: []string{ahp.FileURI(dir)}, Config: config}
	first, err := d.sessions.create(ctx, nil, principal, p, by)
	if err != nil {
		return "", err
	}
	if err := d.start(ctx, cl, first, del.Title, msg); err != nil {
		return "", fmt.Errorf("new session %s: %w", uri, err)
	}
	where := dir
	if rec, found, err := d.env.Store.Session(ctx, uri); err == nil && found && len(rec.WorkingDirectories) > 0 {
		where, _ = ahp.LocalPath(rec.WorkingDirectories[0])
	}
	note := ""
	if del.Worktree {
		note = ", a git worktree of its own"
	}
	return fmt.Sprintf("New session created (%s), working in %s%s; its chat (%s) is working on the prompt.", uri, where, note, first), nil
}

// start titles a delegated chat (stored first, so the prompt does not name
// it) and starts its turn with the prompt.
func (d *toolDesk) start(ctx context.Context, cl chat.Client, chatURI, title string, msg ahp.Message) error {
	return d.sessions.onChat(ctx, chatURI, func(c *chat.Chat) error {
		if err := c.Rename(ctx, title); err != nil {
			return fmt.Errorf("title its chat: %w", err)
		}
		start := ahp.ChatTurnStarted{TurnID: uuid.NewString(), StartedAt: isoTime(d.env.Now()), Message: msg}
		if err := c.Dispatch(cl, 0, start); err != nil {
			return fmt.Errorf("start its chat: %w", err)
		}
		return nil
	})
}
