package bot

import (
	"encoding/base64"
	"reflect"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/attach"
)

// TestWorkAttachments: each resolved attachment of a bot turn becomes the
// attachment the work session's turn carries (issue 35 §5).
func TestWorkAttachments(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name string
		in   agent.Attachment
		want ahp.MessageAttachment
	}{
		{"an image goes as its bytes",
			agent.Attachment{As: attach.AsImage, Label: "shot.png", Path: "/d/a/shot.png", MimeType: "image/png", Data: []byte("PNG")},
			ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Label: "shot.png", ContentType: "image/png", Data: b64("PNG")}},
		{"text read inline goes as its bytes",
			agent.Attachment{As: attach.AsInline, Label: "notes.txt", Path: "/d/a/notes.txt", MimeType: "text/markdown", Text: "# hi"},
			ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Label: "notes.txt", ContentType: "text/markdown", Data: b64("# hi")}},
		{"inline text of no type is plain",
			agent.Attachment{As: attach.AsInline, Label: "paste", Path: "/d/a/paste", Text: "x"},
			ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Label: "paste", ContentType: "text/plain", Data: b64("x")}},
		{"an excerpt goes as its representation",
			agent.Attachment{As: attach.AsInline, Label: "#chat", Text: "the transcript"},
			ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: "#chat", ModelRepresentation: "the transcript"}},
		{"a file by path goes as that resource",
			agent.Attachment{As: attach.AsPath, Label: "doc.pdf", Path: "/d/a/doc.pdf", MimeType: "application/pdf"},
			ahp.MessageAttachment{Type: ahp.AttachmentResource, Label: "doc.pdf", URI: "file:///d/a/doc.pdf", ContentType: "application/pdf"}},
		{"a resource of another scheme stays one",
			agent.Attachment{As: attach.AsPath, Label: "remote", Path: "vscode-remote://h/x"},
			ahp.MessageAttachment{Type: ahp.AttachmentResource, Label: "remote", URI: "vscode-remote://h/x"}},
		{"a relative path is only named",
			agent.Attachment{As: attach.AsPath, Label: "rel", Path: "src/a.go"},
			ahp.MessageAttachment{Type: ahp.AttachmentSimple, Label: "rel", ModelRepresentation: "src/a.go"}},
		{"a label from the path when none",
			agent.Attachment{As: attach.AsPath, Path: "/d/a/b.bin"},
			ahp.MessageAttachment{Type: ahp.AttachmentResource, Label: "b.bin", URI: "file:///d/a/b.bin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := workAttachments([]agent.Attachment{tc.in})
			if len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
				t.Fatalf("workAttachments(%+v) = %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
	if workAttachments(nil) != nil {
		t.Fatal("no attachments made some")
	}
}
