package attach

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

func size(n int64) *int64 { return &n }

// TestClassify covers C-ATT-02..06, 37..39: how an attachment reaches the
// model is one of three kinds.
func TestClassify(t *testing.T) {
	tests := []struct {
		rule        string
		contentType string
		size        int64
		own         bool
		want        string
	}{
		{"C-ATT-02 jpeg", "image/jpeg", 1000, true, AsImage},
		{"C-ATT-02 png at the limit", "image/png", 5 << 20, true, AsImage},
		{"C-ATT-02 gif", "image/gif", 1, true, AsImage},
		{"C-ATT-02 webp with params", "Image/WebP; q=1", 1, true, AsImage},
		{"C-ATT-03 png over 5 MiB", "image/png", 5<<20 + 1, true, AsPath},
		{"C-ATT-03 svg", "image/svg+xml", 10, true, AsPath},
		{"C-ATT-03 bmp", "image/bmp", 10, true, AsPath},
		{"C-ATT-04 text at the limit", "text/plain", 64 << 10, true, AsInline},
		{"C-ATT-04 json", "application/json", 10, true, AsInline},
		{"C-ATT-04 markdown with charset", "text/markdown; charset=utf-8", 10, true, AsInline},
		{"C-ATT-05 text over 64 KiB", "text/plain", 64<<10 + 1, true, AsPath},
		{"C-ATT-06 pdf", "application/pdf", 10, true, AsPath},
		{"C-ATT-06 no type", "", 10, true, AsPath},
		{"C-ATT-39 somebody's png", "image/png", 10, false, AsPath},
		{"C-ATT-39 somebody's text", "text/plain", 10, false, AsPath},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got := Classify(tt.contentType, tt.size, tt.own)
			if got != tt.want {
				t.Errorf("Classify(%q, %d, %v) = %q, want %q", tt.contentType, tt.size, tt.own, got, tt.want)
			}
			// C-ATT-37: always one of the three.
			if got != AsImage && got != AsInline && got != AsPath {
				t.Errorf("kind %q is none of the three", got)
			}
		})
	}
}

// TestLimits covers C-ATT-02 (reading 1: 5 MiB, not 5 MB), C-ATT-04 and
// C-ATT-15.
func TestLimits(t *testing.T) {
	if ImageLimit != 5*1024*1024 {
		t.Errorf("C-ATT-02: ImageLimit = %d", ImageLimit)
	}
	if InlineTextLimit != 64*1024 {
		t.Errorf("C-ATT-04: InlineTextLimit = %d", InlineTextLimit)
	}
	if DefaultFetchLimit != 32*1024*1024 {
		t.Errorf("C-ATT-15: DefaultFetchLimit = %d", DefaultFetchLimit)
	}
}

// TestOwn covers C-ATT-38: the snapshot tag marks a file as the message's
// own.
func TestOwn(t *testing.T) {
	tests := []struct {
		rule string
		meta map[string]any
		want bool
	}{
		{"C-ATT-38 tagged true", map[string]any{SnapshotMetaKey: true}, true},
		{"C-ATT-38 tagged with an object", map[string]any{SnapshotMetaKey: map[string]any{"uri": "x"}}, true},
		{"C-ATT-38 tagged false", map[string]any{SnapshotMetaKey: false}, false},
		{"C-ATT-39 untagged", nil, false},
		{"C-ATT-39 other meta", map[string]any{"x": true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := Own(ahp.MessageAttachment{Type: ahp.AttachmentResource, Meta: tt.meta}); got != tt.want {
				t.Errorf("Own = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlan covers C-ATT-07, 11, 13, 14, 16, 17, 18, 22: what the host does
// with each attachment as sent.
func TestPlan(t *testing.T) {
	fetch := PlanOptions{CanFetch: true, FetchLimit: DefaultFetchLimit}
	tests := []struct {
		rule string
		a    ahp.MessageAttachment
		o    PlanOptions
		want Disposition
	}{
		{"C-ATT-07 inline bytes are written", ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Data: "aGk=", ContentType: "text/plain"}, PlanOptions{}, Write},
		{"C-ATT-07 inline bytes are written when fetching is possible too", ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource, Data: "aGk="}, fetch, Write},
		{"C-ATT-11 a resource on another scheme is read through the client", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "vscode-remote://x/a.txt"}, fetch, Fetch},
		{"C-ATT-11 untitled buffer", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "untitled:Untitled-1", SizeHint: size(10)}, fetch, Fetch},
		{"C-ATT-13 a directory is left as sent", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "vscode-remote://x/dir", DisplayKind: "directory"}, fetch, Keep},
		{"C-ATT-13 inode/directory", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "file:///tmp", ContentType: "inode/directory"}, fetch, Keep},
		{"C-ATT-14 over the limit is left where it is", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "vscode-remote://x/big", SizeHint: size(DefaultFetchLimit + 1)}, fetch, Keep},
		{"C-ATT-14 at the limit is asked for", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "vscode-remote://x/big", SizeHint: size(DefaultFetchLimit)}, fetch, Fetch},
		{"C-ATT-16 a limit of 0 asks for any size", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "vscode-remote://x/huge", SizeHint: size(1 << 40)}, PlanOptions{CanFetch: true, FetchLimit: 0}, Fetch},
		{"C-ATT-17 another scheme, no client to ask: left as sent", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "https://example.invalid/a"}, PlanOptions{}, Keep},
		{"C-ATT-18 a file: URI is left as sent", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "file:///home/me/a.go"}, fetch, Keep},
		{"C-ATT-18 FILE: scheme case", ahp.MessageAttachment{Type: ahp.AttachmentResource, URI: "FILE:///home/me/a.go"}, fetch, Keep},
		{"C-ATT-22 a chat attachment is resolved", ahp.MessageAttachment{Type: ahp.AttachmentChat, Resource: "ahp-chat:/x"}, PlanOptions{}, Resolve},
		{"C-ATT-22 simple is carried", ahp.MessageAttachment{Type: ahp.AttachmentSimple, ModelRepresentation: "x"}, fetch, Keep},
		{"C-ATT-22 annotations are carried", ahp.MessageAttachment{Type: ahp.AttachmentAnnotations, Resource: "file:///a"}, fetch, Keep},
		{"C-ATT-22 embedded without bytes is carried", ahp.MessageAttachment{Type: ahp.AttachmentEmbeddedResource}, fetch, Keep},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := Plan(tt.a, tt.o); got != tt.want {
				t.Errorf("Plan = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWithinFetchLimit covers C-ATT-14..16.
func TestWithinFetchLimit(t *testing.T) {
	tests := []struct {
		rule  string
		hint  *int64
		limit int64
		want  bool
	}{
		{"C-ATT-14 over", size(33 << 20), DefaultFetchLimit, false},
		{"C-ATT-15 the default admits 32 MiB", size(32 << 20), DefaultFetchLimit, true},
		{"C-ATT-15 the default refuses a byte more", size(32<<20 + 1), DefaultFetchLimit, false},
		{"C-ATT-16 0 asks for any size", size(1 << 50), 0, true},
		{"C-ATT-14 no hint is asked for", nil, 10, true},
		{"C-ATT-14 a configured limit", size(11), 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := WithinFetchLimit(tt.hint, tt.limit); got != tt.want {
				t.Errorf("WithinFetchLimit = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFileName covers C-ATT-09: the label with the characters a path
// segment cannot hold replaced.
func TestFileName(t *testing.T) {
	tests := []struct {
		rule, label, want string
	}{
		{"C-ATT-09 plain", "image.png", "image.png"},
		{"C-ATT-09 slash", "a/b.txt", "a_b.txt"},
		{"C-ATT-09 backslash", `a\b.txt`, "a_b.txt"},
		{"C-ATT-09 windows reserved", `a<b>c:d"e|f?g*h`, "a_b_c_d_e_f_g_h"},
		{"C-ATT-09 control characters", "a\x00b\nc\x7f", "a_b_c_"},
		{"C-ATT-09 dot dot", "..", "attachment"},
		{"C-ATT-09 dot", ".", "attachment"},
		{"C-ATT-09 empty", "", "attachment"},
		{"C-ATT-09 traversal", "../../etc/passwd", ".._.._etc_passwd"},
		{"C-ATT-09 unicode kept", "café ☕.md", "café ☕.md"},
		{"C-ATT-09 trailing spaces", "note.txt  ", "note.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" "+tt.want, func(t *testing.T) {
			got := FileName(tt.label)
			if got != tt.want {
				t.Errorf("FileName(%q) = %q, want %q", tt.label, got, tt.want)
			}
			if strings.ContainsAny(got, "/\\\x00") {
				t.Errorf("FileName(%q) = %q holds a separator", tt.label, got)
			}
		})
	}
	long := FileName(strings.Repeat("é", 300))
	if len(long) > maxNameBytes || !strings.HasPrefix(long, "é") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("C-ATT-09 long label: %d bytes, %q...", len(long), long[:10])
	}
}

// TestLocation covers C-ATT-09: a folder of its own named by a UUID under
// the session's attachments folder.
func TestLocation(t *testing.T) {
	got := Location("/data/attachments", "sess-1", "0b6a0c2e-1111-4222-8333-444455556666", "my pic/1.png")
	want := filepath.Join("/data/attachments", "sess-1", "0b6a0c2e-1111-4222-8333-444455556666", "my pic_1.png")
	if got != want {
		t.Errorf("C-ATT-09 Location = %q, want %q", got, want)
	}
	if got := Location("/r", "../x", "id", "l"); got != filepath.Join("/r", ".._x", "id", "l") {
		t.Errorf("C-ATT-09 a session id cannot leave the folder: %q", got)
	}
}

// TestWritten covers C-ATT-10: from the write on, the message carries the
// path, not the bytes, and says the file is its own (C-ATT-38).
func TestWritten(t *testing.T) {
	a := ahp.MessageAttachment{
		Type: ahp.AttachmentEmbeddedResource, Label: "p.png", ContentType: "image/png",
		Data: base64.StdEncoding.EncodeToString([]byte("png")), Meta: map[string]any{"k": "v"},
	}
	w := Written(a, "/data/attachments/s/id/p.png", 3)
	if w.Type != ahp.AttachmentResource || w.Data != "" || w.URI != "file:///data/attachments/s/id/p.png" {
		t.Errorf("C-ATT-10 Written = %+v", w)
	}
	if w.SizeHint == nil || *w.SizeHint != 3 || w.Label != "p.png" || w.ContentType != "image/png" {
		t.Errorf("C-ATT-10 Written lost a field: %+v", w)
	}
	if !Own(w) || w.Meta["k"] != "v" {
		t.Errorf("C-ATT-38 Written meta = %v", w.Meta)
	}
	if _, ok := a.Meta[SnapshotMetaKey]; ok {
		t.Errorf("Written changed the attachment it was given")
	}
	// C-ATT-13/18: what is written is never planned again.
	if Plan(w, PlanOptions{CanFetch: true}) != Keep {
		t.Errorf("a written attachment is planned again")
	}
}

func TestDecode(t *testing.T) {
	for _, data := range []string{"aGVsbG8=", "aGVsbG8"} {
		b, err := Decode(ahp.MessageAttachment{Data: data})
		if err != nil || string(b) != "hello" {
			t.Errorf("Decode(%q) = %q, %v", data, b, err)
		}
	}
	if _, err := Decode(ahp.MessageAttachment{Data: "!!!"}); err == nil {
		t.Errorf("Decode of garbage: no error")
	}
}
