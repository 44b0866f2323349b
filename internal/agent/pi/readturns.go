package pi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/ahpd/ahpd/internal/agent"
)

// ReadTurns reads a conversation back from pi's session file
// (agent.TranscriptReader): the active branch, one turn per prompt, each
// naming its last entry as its point. A user message right after a tool
// result is a steering message pi took into the running turn; one after an
// answer starts a turn (a steering message pi took after the turn's last
// answer cannot be told from a prompt, and reads as a turn of its own). A
// conversation with no session file is an error wrapping fs.ErrNotExist.
func (p *Pi) ReadTurns(ctx context.Context, conversationID string, directories []string) ([]agent.TranscriptTurn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read pi session %s: %w", conversationID, err)
	}
	path, err := p.sessions().find(conversationID)
	if err != nil {
		return nil, err
	}
	_, entries, err := readSession(path)
	if err != nil {
		return nil, fmt.Errorf("read pi session %s: %w", conversationID, err)
	}
	br, err := branch(entries, "")
	if err != nil {
		return nil, fmt.Errorf("read pi session %s: %w", conversationID, err)
	}
	return transcriptTurns(br), nil
}

// transcriptTurns folds a branch of entries into turns.
func transcriptTurns(br []*entry) []agent.TranscriptTurn {
	var (
		out  []agent.TranscriptTurn
		cur  *agent.TranscriptTurn
		last string // the role of the last message entry
	)
	tools := make(map[string]*agent.TranscriptPart)
	for _, e := range br {
		switch e.Type {
		case "message":
			m := e.Message
			if m == nil {
				continue
			}
			switch m.Role {
			case "user":
				text := m.text()
				if cur != nil && last == "toolResult" {
					cur.Steering = append(cur.Steering, text)
					break
				}
				out = append(out, agent.TranscriptTurn{ID: e.ID, Text: saidOf(text), Started: e.time(), Outcome: agent.OutcomeComplete})
				cur = &out[len(out)-1]
				tools = make(map[string]*agent.TranscriptPart)
			case "assistant":
				if cur == nil {
					continue
				}
				for _, b := range m.blocks() {
					switch b.Type {
					case "text":
						if b.Text != "" {
							cur.Parts = append(cur.Parts, agent.TranscriptPart{Kind: agent.TranscriptMarkdown, Text: b.Text})
						}
					case "thinking":
						if b.Thinking != "" {
							cur.Parts = append(cur.Parts, agent.TranscriptPart{Kind: agent.TranscriptReasoning, Text: b.Thinking})
						}
					case "toolCall":
						input := string(b.Arguments)
						if !json.Valid(b.Arguments) {
							input = "{}"
						}
						cur.Parts = append(cur.Parts, agent.TranscriptPart{Kind: agent.TranscriptToolCall, Tool: &agent.ToolCall{
							ID: b.ID, Name: b.Name, DisplayName: b.Name, Input: input, Invocation: invocation(b.Name, b.Arguments),
						}})
					}
				}
				for i := range cur.Parts {
					if t := cur.Parts[i].Tool; t != nil {
						tools[t.ID] = &cur.Parts[i]
					}
				}
				switch m.StopReason {
				case "aborted":
					cur.Outcome = agent.OutcomeCancelled
				case "error":
					cur.Outcome, cur.ErrorType, cur.ErrorMessage = agent.OutcomeError, "modelError", m.ErrorMessage
				case "length":
					cur.Outcome, cur.ErrorType, cur.ErrorMessage = agent.OutcomeError, "length", "the model reached its token limit"
				default:
					cur.Outcome = agent.OutcomeComplete
				}
				if u := m.Usage; u != nil {
					if cur.Usage == nil {
						cur.Usage = &agent.Usage{}
					}
					cur.Usage.InputTokens += u.Input
					cur.Usage.OutputTokens += u.Output
					cur.Usage.CacheRead += u.CacheRead
					cur.Usage.Model = m.Provider + "/" + m.Model
				}
			case "toolResult":
				if cur == nil {
					continue
				}
				if part := tools[m.ToolCallID]; part != nil && !part.Done {
					part.Done = true
					part.Tool.Success = !m.IsError
					text := (&toolResult{Content: m.Content}).text()
					if m.IsError {
						part.Tool.Error = text
					} else {
						part.Tool.Output = text
					}
				}
			}
			last = m.Role
		case "compaction":
			if cur != nil {
				cur.Parts = append(cur.Parts, agent.TranscriptPart{Kind: agent.TranscriptNotice, Text: compactionNotice("", e.Tokens)})
			}
		}
		if cur != nil {
			cur.Point = e.ID
			cur.Ended = e.time()
		}
	}
	return out
}

// FindConversation finds a conversation pi keeps under id (a session file
// named by it: one pi wrote on its own, or one of ahpd's) and reads where
// it ran, when and its first prompt, without starting pi (agent.Catalogue).
func (p *Pi) FindConversation(ctx context.Context, id string) (agent.ConversationInfo, bool, error) {
	if !validID(id) {
		return agent.ConversationInfo{}, false, nil
	}
	path, err := p.sessions().find(id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return agent.ConversationInfo{}, false, nil
		}
		return agent.ConversationInfo{}, false, err
	}
	header, entries, err := readSession(path)
	if err != nil {
		return agent.ConversationInfo{}, false, err
	}
	info := agent.ConversationInfo{ID: id, Directory: header.Cwd, Created: header.time().UTC()}
	if fi, err := os.Stat(path); err == nil {
		info.Modified = fi.ModTime().UTC()
	}
	if info.Created.IsZero() {
		info.Created = info.Modified
	}
	for _, e := range entries {
		if e.Type == "message" && e.Message != nil && e.Message.Role == "user" {
			info.Title = firstLine(saidOf(e.Message.text()))
			break
		}
	}
	return info, true, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

var (
	_ agent.TranscriptReader = (*Pi)(nil)
	_ agent.Catalogue        = (*Pi)(nil)
)
