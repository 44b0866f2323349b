package chat

import (
	"context"
	"strings"
)

// SetTitle renames the chat (a client's rename, or the host's title).
func (c *Chat) SetTitle(title string, provisional bool) error {
	return c.do(func() { c.setTitle(title, provisional) })
}

// Rename sets the chat's title and waits until it is stored and the
// session told, so the session can say it in the same step.
func (c *Chat) Rename(ctx context.Context, title string) error {
	return c.call(ctx, func() { c.setTitle(title, false) })
}

func (c *Chat) setTitle(title string, provisional bool) {
	if title == c.st().Title && provisional == c.record.TitleProvisional {
		return
	}
	c.st().Title = title
	c.record.Title = title
	c.record.TitleProvisional = provisional
	// The title is stored before the session says it (C-COMP-26).
	c.durable.commit("title", c.durable.recordOp())
	c.durable.summaryChanged()
}

// autoTitle names the chat after its first message (C-COMP-26): a ! command
// gives a provisional title its first message replaces (C-COMP-27, 28).
func (c *Chat) autoTitle(text string, first, isCommand bool) {
	if !first && !c.record.TitleProvisional {
		return
	}
	if !first && isCommand {
		return
	}
	if !c.record.TitleProvisional && c.st().Title != "" && c.st().Title != DefaultTitle {
		return
	}
	title := CleanTitle(text)
	if title == "" {
		return
	}
	c.setTitle(title, isCommand)
}

// DefaultTitle is an unnamed chat's title.
const DefaultTitle = "New Chat"

// CleanTitle makes a short one-line title out of a message.
func CleanTitle(text string) string {
	line := strings.TrimSpace(text)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	line = strings.Join(strings.Fields(line), " ")
	const limit = 60
	if r := []rune(line); len(r) > limit {
		line = strings.TrimSpace(string(r[:limit-1])) + "…"
	}
	return line
}
