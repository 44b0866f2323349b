package host

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/hostcmd"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/filefind"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/session"
)

const completionsMax = 50

// completer answers completions: what a / offers in the session, what an @
// path names, and which chats and files a # offers.
type completer struct {
	env      *env.Env
	agents   *agent.Registry
	sessions *sessionDesk
	// files keeps recent listings of working directories for @ and #.
	files *fileIndex
}

// completions answers what a / offers in the session, what an @ path
// names, and which chats and files a # offers (C-CMD-15..18). Offsets
// count UTF-16 code units.
func (d *completer) completions(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.CompletionsParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, false); err != nil {
		return nil, err
	}
	if !cl.principal.Can(auth.ChatTurns) {
		return nil, ahp.Errorf(ahp.ErrPermissionDenied, "completions need the grant %s", auth.ChatTurns)
	}
	s, _, err := d.sessions.resolveChat(ctx, p.Channel)
	if err != nil {
		return nil, err
	}
	units := utf16.Encode([]rune(p.Text))
	if p.Offset < 0 || p.Offset > len(units) {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.offset: %d is outside the text (%d UTF-16 units)", p.Offset, len(units))
	}
	before := units[:p.Offset]
	start := len(before)
	for start > 0 && !unicode.IsSpace(rune(before[start-1])) {
		start--
	}
	token := string(utf16.Decode(before[start:]))
	res := ahp.CompletionsResult{}
	if token == "" {
		return res, nil
	}
	rangeStart, rangeEnd := start, p.Offset
	item := func(insert string, att ahp.MessageAttachment) ahp.CompletionItem {
		rs, re := rangeStart, rangeEnd
		return ahp.CompletionItem{InsertText: insert, RangeStart: &rs, RangeEnd: &re, Attachment: att}
	}
	var state ahp.ChatState
	if err := d.sessions.onChat(ctx, p.Channel, func(c *chat.Chat) (err error) {
		state, err = c.State(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	dirs := state.WorkingDirectories
	if len(dirs) == 0 {
		if dirs, err = s.Directories(ctx); err != nil {
			return nil, err
		}
	}
	switch token[0] {
	case '/':
		// C-CMD-15: the session's commands, as its backend declares them.
		if start != 0 && strings.TrimSpace(string(utf16.Decode(units[:start]))) != "" {
			return res, nil // a command only opens a message
		}
		sum, err := s.Summary(ctx)
		if err != nil {
			return nil, err
		}
		var cmds []agent.Command
		if len(state.Turns) > 0 {
			// The host's own commands: a chat with no turn yet is named
			// by its first message, so /rename is offered once it has one.
			cmds = append(cmds, hostcmd.Names...)
		}
		if a, ok := d.agents.Get(sum.Provider); ok {
			cmds = append(cmds, a.Info(ctx).Commands...)
		}
		for _, cmd := range cmds {
			if !strings.HasPrefix(cmd.Name, token[1:]) {
				continue
			}
			att := ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: "/" + cmd.Name, ModelRepresentation: cmd.Description,
				// VS Code keeps a completion only when it names its command.
				Meta: map[string]any{"command": cmd.Name}}
			res.Items = append(res.Items, item("/"+cmd.Name+" ", att))
		}
	case '@':
		for _, f := range d.matchFiles(dirs, token[1:]) {
			res.Items = append(res.Items, item("@"+f.insert, f.attachment()))
		}
	case '#':
		q := token[1:]
		if strings.HasPrefix("chat:", q) || strings.HasPrefix(q, "chat:") {
			// On its way to #chat: every other chat matches; after it, the
			// chats whose title holds what follows.
			name, _ := strings.CutPrefix(q, "chat:")
			if !strings.HasPrefix(q, "chat:") {
				name = ""
			}
			items, err := d.chatPointers(ctx, s, p.Channel, name)
			if err != nil {
				return nil, err
			}
			for _, ptr := range items {
				res.Items = append(res.Items, item("#chat:"+ptr.Label+" ", ptr))
			}
			if q == "chat:" || !strings.HasPrefix(q, "chat:") {
				for _, f := range d.matchFiles(dirs, q) {
					res.Items = append(res.Items, item("#"+f.insert, f.attachment()))
				}
			}
			break
		}
		for _, f := range d.matchFiles(dirs, q) {
			res.Items = append(res.Items, item("#"+f.insert, f.attachment()))
		}
	}
	if len(res.Items) > completionsMax {
		res.Items = res.Items[:completionsMax]
	}
	return res, nil
}

// chatPointers are the #chat: attachments a chat's message may carry: the
// session's other chats with a complete turn, whose title holds name
// (case-insensitive), each pinned at its newest complete turn. The chat
// being typed in is never offered.
func (d *completer) chatPointers(ctx context.Context, s *session.Session, typing, name string) ([]ahp.MessageAttachment, error) {
	sum, err := s.Summary(ctx)
	if err != nil {
		return nil, err
	}
	var out []ahp.MessageAttachment
	for _, ch := range sum.Chats {
		// A title may span lines (a client renamed it so); a pointer is
		// one line of text.
		title := strings.Join(strings.Fields(ch.Title), " ")
		if ch.Resource == typing || !strings.Contains(strings.ToLower(title), strings.ToLower(name)) {
			continue
		}
		end, err := d.env.Store.LastCompleteTurn(ctx, ch.Resource)
		if err != nil {
			return nil, err
		}
		if end == "" {
			continue
		}
		out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentChat, Label: title, Resource: ch.Resource, EndTurn: end})
	}
	return out, nil
}

// fileMatch is one file or folder a completion offers.
type fileMatch struct {
	insert, label, abs string
	dir                bool
}

func (f fileMatch) attachment() ahp.MessageAttachment {
	att := ahp.MessageAttachment{Type: ahp.AttachmentResource, Label: f.label, URI: ahp.FileURI(f.abs), DisplayKind: "document"}
	if f.dir {
		att.DisplayKind = "directory"
	}
	return att
}

// File index bounds: how many entries one directory's walk lists, how
// long a listing is reused (a completion is asked for on every key), and
// how many directories' listings are kept.
const (
	fileIndexLimit = 20000
	fileIndexTTL   = 10 * time.Second
	fileIndexKeep  = 64
)

// fileIndex keeps the recent listings of working directories. Its own
// mutex guards it: completions of many connections read it.
type fileIndex struct {
	// mu (rank lockorder.HostFileIndex) guards dirs. It is held for the map
	// only (a directory is walked outside it), and no other lock is taken
	// inside it.
	mu   lockorder.Mutex
	dirs map[string]indexed
}

func newFileIndex() *fileIndex {
	return &fileIndex{mu: lockorder.Mutex{Rank: lockorder.HostFileIndex}, dirs: make(map[string]indexed)}
}

type indexed struct {
	at      time.Time
	entries []filefind.Entry
}

// list is root's listing, walked again when older than fileIndexTTL.
func (x *fileIndex) list(root string, now time.Time) []filefind.Entry {
	x.mu.Lock()
	got, ok := x.dirs[root]
	x.mu.Unlock()
	if ok && now.Sub(got.at) < fileIndexTTL {
		return got.entries
	}
	entries := filefind.Walk(root, fileIndexLimit)
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.dirs) >= fileIndexKeep {
		for k, v := range x.dirs {
			if now.Sub(v.at) >= fileIndexTTL || len(x.dirs) >= fileIndexKeep {
				delete(x.dirs, k)
			}
		}
	}
	x.dirs[root] = indexed{at: now, entries: entries}
	return entries
}

// matchFiles finds what query names in the directories (filefind.Match):
// a file is inserted by its name, or by its path when another match shares
// the name; a folder by its path and a slash.
func (d *completer) matchFiles(dirs []string, query string) []fileMatch {
	var all []filefind.Entry
	for _, dir := range dirs {
		root, err := ahp.LocalPath(dir)
		if err != nil {
			continue
		}
		all = append(all, d.files.list(root, d.env.Now())...)
	}
	found := filefind.Match(all, query, completionsMax)
	labels := filefind.Labels(found)
	out := make([]fileMatch, 0, len(found))
	for i, e := range found {
		insert := e.Base()
		switch {
		case e.Dir:
			insert = e.Rel + "/"
		case labels[i] != e.Base() || strings.Contains(query, "/"):
			insert = e.Rel
		}
		out = append(out, fileMatch{insert: insert, label: labels[i], abs: e.Abs(), dir: e.Dir})
	}
	return out
}
