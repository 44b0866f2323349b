package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/google/uuid"
)

// FindConversation finds a conversation the CLI wrote under id (its
// transcript in any project folder) and reads where it ran, when and its
// first prompt, without starting the CLI.
func (c *Claude) FindConversation(ctx context.Context, id string) (agent.ConversationInfo, bool, error) {
	if _, err := uuid.Parse(id); err != nil {
		return agent.ConversationInfo{}, false, nil
	}
	path, err := findTranscript(c.opts.configDir(), id, "")
	if errors.Is(err, fs.ErrNotExist) {
		return agent.ConversationInfo{}, false, nil
	}
	if err != nil {
		return agent.ConversationInfo{}, false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return agent.ConversationInfo{}, false, err
	}
	defer f.Close()
	info := agent.ConversationInfo{ID: id}
	if fi, err := f.Stat(); err == nil {
		info.Modified = fi.ModTime().UTC()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() && (info.Directory == "" || info.Title == "" || info.Created.IsZero()) {
		if ctx.Err() != nil {
			return agent.ConversationInfo{}, false, ctx.Err()
		}
		var line struct {
			Type      string    `json:"type"`
			Cwd       string    `json:"cwd"`
			Timestamp time.Time `json:"timestamp"`
			Message   struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if info.Created.IsZero() && !line.Timestamp.IsZero() {
			info.Created = line.Timestamp.UTC()
		}
		if info.Directory == "" && line.Cwd != "" {
			info.Directory = line.Cwd
		}
		if info.Title == "" && line.Type == "user" && line.Message.Role == "user" {
			var text string
			if json.Unmarshal(line.Message.Content, &text) == nil {
				info.Title = firstLine(text)
			}
		}
	}
	if info.Created.IsZero() {
		info.Created = info.Modified
	}
	return info, true, sc.Err()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

var _ agent.Catalogue = (*Claude)(nil)
