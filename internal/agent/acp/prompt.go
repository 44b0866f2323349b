package acp

import (
	"encoding/base64"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
)

// Host context is sent as its own text block, wrapped so a replay can tell
// it from what was said.
const (
	hostContextOpen  = "<host-context>\n"
	hostContextClose = "\n</host-context>"
)

var hostContextRE = regexp.MustCompile(`(?s)<host-context>.*?</host-context>\s*`)

// promptBlocks is a turn's prompt: what the host has to say first
// (C-TURN-111), then the message, then the attachments: images as image
// blocks and inlined text as embedded resources where the agent's prompt
// capabilities allow, else as resource links (every agent takes those).
func promptBlocks(t agent.Turn, caps acpsdk.PromptCapabilities) []acpsdk.ContentBlock {
	var out []acpsdk.ContentBlock
	if t.HostContext != "" {
		out = append(out, acpsdk.TextBlock(hostContextOpen+t.HostContext+hostContextClose))
	}
	if t.Text != "" || len(t.Attachments) == 0 {
		out = append(out, acpsdk.TextBlock(t.Text))
	}
	for _, a := range t.Attachments {
		name := a.Label
		if name == "" {
			name = filepath.Base(a.Path)
		}
		uri := fileURI(a.Path)
		switch {
		case a.As == "image" && caps.Image && len(a.Data) > 0:
			b := acpsdk.ImageBlock(base64.StdEncoding.EncodeToString(a.Data), a.MimeType)
			if uri != "" {
				b.Image.Uri = &uri
			}
			out = append(out, b)
		case a.As == "inline" && caps.EmbeddedContext:
			res := &acpsdk.TextResourceContents{Uri: uri, Text: a.Text}
			if res.Uri == "" {
				res.Uri = "ahp-attachment:" + url.PathEscape(name)
			}
			if a.MimeType != "" {
				mt := a.MimeType
				res.MimeType = &mt
			}
			out = append(out, acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: res}))
		case a.As == "inline" && uri == "":
			// Nothing to link to: the text goes as text.
			out = append(out, acpsdk.TextBlock("<attachment name=\""+name+"\">\n"+a.Text+"\n</attachment>"))
		case uri != "":
			out = append(out, acpsdk.ResourceLinkBlock(name, uri))
		}
	}
	return out
}

func fileURI(path string) string {
	if path == "" {
		return ""
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// stripHostContext takes what the host added out of a replayed prompt.
func stripHostContext(s string) string {
	return strings.TrimSpace(hostContextRE.ReplaceAllString(s, ""))
}
