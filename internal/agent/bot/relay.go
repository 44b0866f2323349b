package bot

import (
	"encoding/base64"
	"path/filepath"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
)

// workAttachments are a bot turn's attachments as the work session's turn
// carries them (issue 35 §5): what the bot's chat resolved goes on in the
// form the work chat admits as the model's again. An image, and text the
// bot's chat read inline, go as embedded bytes, which the work chat writes
// into its own session's folder (C-ATT-07); a pointer's excerpt (a #chat:
// or a simple attachment) goes as its model representation; anything the
// bot's chat left by path goes as that resource, for the work session's
// agent to read where it stands.
func workAttachments(in []agent.Attachment) []ahp.MessageAttachment {
	if len(in) == 0 {
		return nil
	}
	out := make([]ahp.MessageAttachment, 0, len(in))
	for _, a := range in {
		label := a.Label
		if label == "" {
			label = filepath.Base(a.Path)
		}
		switch {
		case a.As == attach.AsImage && len(a.Data) > 0:
			out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Label: label, ContentType: a.MimeType,
				Data: base64.StdEncoding.EncodeToString(a.Data)})
		case a.As == attach.AsInline && a.Path != "":
			ct := a.MimeType
			if ct == "" {
				ct = "text/plain"
			}
			out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Label: label, ContentType: ct,
				Data: base64.StdEncoding.EncodeToString([]byte(a.Text))})
		case a.As == attach.AsInline:
			out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: label, ModelRepresentation: a.Text})
		case a.Path != "":
			uri := a.Path
			if filepath.IsAbs(a.Path) {
				uri = ahp.FileURI(a.Path)
			} else if !strings.Contains(a.Path, ":") {
				// A relative path means nothing in another session's folder.
				out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: label, ModelRepresentation: a.Path})
				continue
			}
			out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentResource, Label: label, URI: uri, ContentType: a.MimeType})
		default:
			out = append(out, ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: label, ModelRepresentation: label})
		}
	}
	return out
}
