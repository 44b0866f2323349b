package acp

import (
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
)

// TestPromptBlocks: the host's words come first (C-TURN-111), then the
// message, then attachments as embedded resources or resource links as the
// agent's prompt capabilities allow; a replay strips the host's words.
func TestPromptBlocks(t *testing.T) {
	turn := agent.Turn{ID: "t", Text: "the message", HostContext: "host words", Attachments: []agent.Attachment{
		{As: "inline", Label: "a.txt", Path: "/w/a.txt", Text: "inlined"},
		{As: "path", Label: "b.txt", Path: "/w/b.txt"},
	}}
	bs := promptBlocks(turn, acpsdk.PromptCapabilities{EmbeddedContext: true})
	if len(bs) != 4 || bs[0].Text == nil || bs[0].Text.Text != hostContextOpen+"host words"+hostContextClose ||
		bs[1].Text == nil || bs[1].Text.Text != "the message" || bs[2].Resource == nil || bs[3].ResourceLink == nil {
		t.Fatalf("blocks %s", jsonText(bs))
	}
	if bs[2].Resource.Resource.TextResourceContents.Text != "inlined" || bs[3].ResourceLink.Uri != "file:///w/b.txt" {
		t.Fatalf("attachments %s", jsonText(bs[2:]))
	}
	bs = promptBlocks(turn, acpsdk.PromptCapabilities{})
	if bs[2].ResourceLink == nil || bs[2].ResourceLink.Uri != "file:///w/a.txt" {
		t.Fatalf("without embedded context: %s", jsonText(bs[2]))
	}
	if got := stripHostContext(bs[0].Text.Text + bs[1].Text.Text); got != "the message" {
		t.Fatalf("stripped %q", got)
	}
}
