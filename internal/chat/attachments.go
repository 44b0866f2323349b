package chat

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
)

// attachments writes and reads the bytes of a message's attachments as
// the chat admits it (engineHost.Prepare). It is part of the chat actor and
// runs only on the actor's goroutine.
type attachments struct{ c *Chat }

// prepare is what a turn's message becomes when the chat admits it
// (CHATS.md "Attachments", decided once for every backend: C-ATT-01). Inline
// bytes are written under the session's attachments folder before the turn
// is said, and the message carries the path from then on (C-ATT-07..10); a
// write that fails is a log line and leaves that attachment as sent
// (C-ATT-19, 20). Chat attachments stay as sent (C-ATT-35) and reach the
// backend as the pointers the host resolved (resolved, by index; C-ATT-23,
// 36). It returns the message as the chat says and keeps it, what the
// backend is handed, and the first pin nobody can honour (C-ATT-32, 33).
//
// Runs on the actor's goroutine; m's attachments are copied, never changed
// in place.
func (at *attachments) prepare(m ahp.Message, resolved []attach.Resolved) (ahp.Message, []agent.Attachment, error) {
	c := at.c
	if len(m.Attachments) == 0 {
		return m, nil, nil
	}
	byIndex := make(map[int]attach.Resolved, len(resolved))
	for _, r := range resolved {
		byIndex[r.Index] = r
	}
	out := append([]ahp.MessageAttachment(nil), m.Attachments...)
	forms := make([]agent.Attachment, 0, len(out))
	var pinErr error
	w := attach.Writer{Root: c.cfg.Env.Attachments.Dir}
	for i, a := range m.Attachments {
		switch attach.Plan(a, attach.PlanOptions{CanFetch: true, FetchLimit: c.cfg.Env.Attachments.FetchLimit}) {
		case attach.Write:
			// Decoded straight into the file; the host writes a client's
			// inline bytes at its door (host/attachments.go, writeInline), so
			// this writes what reached the chat otherwise, or what the door
			// could not write.
			path, size, err := w.WriteFrom(at.sessionFolder(), a.Label, attach.DecodeReader(strings.NewReader(a.Data)))
			if err == nil {
				out[i] = attach.Written(a, path, size)
				forms = append(forms, keptForm(out[i], at.readableRoots()))
				continue
			}
			// C-ATT-19, 20: the message goes on with the bytes it came with.
			c.log.Warn("attachment left as sent", "label", a.Label, "err", err)
			data, derr := attach.Decode(a)
			if derr != nil {
				forms = append(forms, agent.Attachment{As: attach.AsPath, Label: a.Label, MimeType: a.ContentType})
				continue
			}
			forms = append(forms, ownForm(a.Label, a.ContentType, "", data))
		case attach.Fetch:
			// C-ATT-11, 12: read through the client that sent it (host
			// attachments.go), then written as inline bytes are.
			r, ok := byIndex[i]
			if !ok || !r.Fetched {
				forms = append(forms, keptForm(a, at.readableRoots()))
				continue
			}
			path, err := w.Write(at.sessionFolder(), a.Label, r.Data)
			if err != nil {
				c.log.Warn("fetched attachment not written", "label", a.Label, "err", err)
				forms = append(forms, ownForm(a.Label, r.ContentType, "", r.Data))
				continue
			}
			written := a
			written.ContentType = r.ContentType
			out[i] = attach.Written(written, path, int64(len(r.Data)))
			forms = append(forms, ownForm(a.Label, r.ContentType, path, r.Data))
		case attach.Resolve:
			r, ok := byIndex[i]
			if ok && r.Err != nil {
				if pinErr == nil {
					pinErr = r.Err
				}
				continue
			}
			rep := r.Representation
			if !ok {
				// Not resolved by the host (a message kept across a
				// restart, a resumed turn): the pointer without an excerpt.
				rep = attach.Pointer(attach.Ref{Label: a.Label, Resource: a.Resource, Running: true})
			}
			forms = append(forms, agent.Attachment{As: attach.AsInline, Label: a.Label, Text: rep})
		default:
			forms = append(forms, keptForm(a, at.readableRoots()))
		}
	}
	m.Attachments = out
	return m, forms, pinErr
}

// readableRoots are the folders a file a client tagged as the message's own
// may be read from: the session's attachments folder and the chat's
// directories. Anything else goes to the model by path, for the agent to
// read under its own permissions.
func (at *attachments) readableRoots() []string {
	c := at.c
	roots := slices.Clone(c.cfg.Directories)
	if c.cfg.Env.Attachments.Dir != "" {
		roots = append(roots, filepath.Join(c.cfg.Env.Attachments.Dir, attach.FileName(at.sessionFolder())))
	}
	return roots
}

// sessionFolder names the session's own attachments folder.
func (at *attachments) sessionFolder() string { return attach.SessionFolder(at.c.cfg.Session) }

// ownForm is how the message's own bytes reach the model (C-ATT-02..06).
func ownForm(label, contentType, path string, data []byte) agent.Attachment {
	f := agent.Attachment{Label: label, Path: path, MimeType: contentType}
	switch f.As = attach.Classify(contentType, int64(len(data)), true); f.As {
	case attach.AsImage:
		f.Data = data
	case attach.AsInline:
		f.Text = string(data)
	}
	return f
}

// keptForm is how an attachment left as sent reaches the model. A file
// tagged as the message's own goes as its kind says (C-ATT-38); any other
// file, a directory and a resource on another scheme go by path, for the
// model to read (C-ATT-13, 17, 18, 39).
func keptForm(a ahp.MessageAttachment, roots []string) agent.Attachment {
	switch a.Type {
	case ahp.AttachmentSimple:
		text := a.ModelRepresentation
		if text == "" {
			text = a.Label
		}
		return agent.Attachment{As: attach.AsInline, Label: a.Label, Text: text}
	case ahp.AttachmentAnnotations:
		return agent.Attachment{As: attach.AsPath, Label: a.Label, Path: a.Resource}
	case ahp.AttachmentResource:
		f := agent.Attachment{As: attach.AsPath, Label: a.Label, Path: a.URI, MimeType: a.ContentType}
		if !attach.IsFileURI(a.URI) {
			return f
		}
		path, err := ahp.LocalPath(a.URI)
		if err != nil {
			return f
		}
		f.Path = path
		if attach.IsDirectory(a) || !attach.Own(a) || !attach.IsImage(a.ContentType) && !attach.IsText(a.ContentType) {
			return f
		}
		limit := int64(attach.InlineTextLimit)
		if attach.IsImage(a.ContentType) {
			limit = attach.ImageLimit
		}
		data, err := attach.ReadOwn(path, limit, roots)
		if err != nil {
			return f // too large, unreadable or not the host's to read: by path
		}
		return ownForm(a.Label, a.ContentType, path, data)
	}
	return agent.Attachment{As: attach.AsPath, Label: a.Label}
}
