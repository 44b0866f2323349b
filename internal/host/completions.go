package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
)

const completionsMax = 50

// completions answers what a / offers in the session, what an @ path
// names, and which chats and files a # offers (C-CMD-15..18). Offsets
// count UTF-16 code units.
func (h *Host) completions(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
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
	s, _, err := h.resolveChat(ctx, p.Channel)
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
	if err := h.onChat(ctx, p.Channel, func(c *chat.Chat) (err error) {
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
		a, ok := h.opts.Agents.Get(sum.Provider)
		if !ok {
			return res, nil
		}
		for _, cmd := range a.Info(ctx).Commands {
			if !strings.HasPrefix(cmd.Name, token[1:]) {
				continue
			}
			att := ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: "/" + cmd.Name, ModelRepresentation: cmd.Description,
				// VS Code keeps a completion only when it names its command.
				Meta: map[string]any{"command": cmd.Name}}
			res.Items = append(res.Items, item("/"+cmd.Name+" ", att))
		}
	case '@':
		for _, f := range matchFiles(dirs, token[1:]) {
			res.Items = append(res.Items, item("@"+f.rel, f.attachment()))
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
			sum, err := s.Summary(ctx)
			if err != nil {
				return nil, err
			}
			for _, ch := range sum.Chats {
				if ch.Resource == p.Channel || !strings.Contains(strings.ToLower(ch.Title), strings.ToLower(name)) {
					continue
				}
				att := ahp.MessageAttachment{Type: ahp.AttachmentChat, Label: ch.Title, Resource: ch.Resource}
				res.Items = append(res.Items, item("#chat:"+ch.Title, att))
			}
			if q == "chat:" || !strings.HasPrefix(q, "chat:") {
				for _, f := range matchFiles(dirs, q) {
					res.Items = append(res.Items, item("#"+f.rel, f.attachment()))
				}
			}
			break
		}
		for _, f := range matchFiles(dirs, q) {
			res.Items = append(res.Items, item("#"+f.rel, f.attachment()))
		}
	}
	if len(res.Items) > completionsMax {
		res.Items = res.Items[:completionsMax]
	}
	return res, nil
}

type fileMatch struct {
	rel, abs string
	dir      bool
}

func (f fileMatch) attachment() ahp.MessageAttachment {
	att := ahp.MessageAttachment{Type: ahp.AttachmentResource, Label: filepath.Base(f.abs), URI: ahp.FileURI(f.abs)}
	if f.dir {
		att.DisplayKind = "directory"
	}
	return att
}

// matchFiles lists entries of the directories whose relative path starts
// with prefix: the entries of the folder the prefix names so far.
func matchFiles(dirs []string, prefix string) []fileMatch {
	var out []fileMatch
	for _, d := range dirs {
		root, err := ahp.LocalPath(d)
		if err != nil {
			continue
		}
		folder, part := filepath.Split(filepath.FromSlash(prefix))
		base := filepath.Join(root, folder)
		if rel, err := filepath.Rel(root, base); err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		entries, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), part) || (strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(part, ".")) {
				continue
			}
			abs := filepath.Join(base, e.Name())
			rel, _ := filepath.Rel(root, abs)
			rel = filepath.ToSlash(rel)
			if e.IsDir() {
				rel += "/"
			}
			out = append(out, fileMatch{rel: rel, abs: abs, dir: e.IsDir()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out
}
