package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/ahpd/ahpd/internal/agent"
)

// TurnState is how a turn read back from a transcript ended.
type TurnState int

const (
	TurnComplete TurnState = iota + 1
	TurnCancelled
	TurnError
)

func (s TurnState) String() string {
	switch s {
	case TurnComplete:
		return "complete"
	case TurnCancelled:
		return "cancelled"
	case TurnError:
		return "error"
	}
	return fmt.Sprintf("TurnState(%d)", int(s))
}

// PartKind is the kind of a transcript part.
type PartKind int

const (
	PartMarkdown PartKind = iota + 1
	PartReasoning
	PartToolCall
	// PartNotice is a system notification (a compaction).
	PartNotice
)

func (k PartKind) String() string {
	switch k {
	case PartMarkdown:
		return "markdown"
	case PartReasoning:
		return "reasoning"
	case PartToolCall:
		return "toolCall"
	case PartNotice:
		return "notice"
	}
	return fmt.Sprintf("PartKind(%d)", int(k))
}

// TranscriptPart is one part of a turn read back, in the order the model
// produced it.
type TranscriptPart struct {
	Kind PartKind
	// Text is the markdown, reasoning or notice text.
	Text string
	// Tool is the call of a PartToolCall, its result folded in.
	Tool *agent.ToolCall
	// ToolDone: a result came back for Tool.
	ToolDone bool
	// Denied: the result is the user's refusal of a call that asked for
	// confirmation (Confirm with approved false).
	Denied bool
}

// TranscriptTurn is one turn read back from a Claude transcript.
type TranscriptTurn struct {
	// PromptID is the uuid of the prompt entry the turn starts at.
	PromptID string
	// UserText is what was said (host context and attachment blocks left out).
	UserText string
	// Steering are the steering messages the CLI took into the turn at a
	// tool call (queued_command attachments), in order (C-TURN-114).
	Steering []string
	Parts    []TranscriptPart
	State    TurnState
	// Error is the message of a TurnError; ErrorType says what kind of
	// failure it was ("api_error" for the API's).
	Error     string
	ErrorType string
	// Point is the uuid of the turn's last chain entry: where a fork or
	// rewind at this turn resumes (C-COMP-07).
	Point string
	Usage agent.Usage
	// Started is the prompt's timestamp; Ended the timestamp of the
	// entry at Point.
	Started time.Time
	Ended   time.Time
}

// interruptedPrefix starts the user text the CLI writes for a stop:
// "[Request interrupted by user]" or "... for tool use]".
const interruptedPrefix = "[Request interrupted by user"

// interruptedAtTool is in the text of a stop that came while a tool call
// ran or waited for confirmation: the results the CLI wrote just before it
// answer the calls the stop cancelled.
const interruptedAtTool = "for tool use"

// hostBlockPrefixes start the text blocks this backend adds ahead of what
// was said; a read-back turn leaves them out of UserText.
var hostBlockPrefixes = []string{"<host-context>", "<attachment"}

// ReadTranscript reads conversation conversationID, run in cwd, back from
// the CLI's transcript into turns. It follows the transcript's chain from
// its newest entry back to the root, so a rewound conversation reads back
// as its current branch. A prompt the CLI wrote starts a turn (C-TURN-113):
// a steering message it ran late reads back as a turn of its own
// (C-TURN-112, C-TURN-116); one taken in at a tool call stays in its turn
// (C-TURN-114); [Request interrupted by user] ends a cancelled turn and is
// no turn (C-TURN-115).
func (c *Claude) ReadTranscript(conversationID, cwd string) ([]TranscriptTurn, error) {
	path, err := findTranscript(c.opts.configDir(), conversationID, cwd)
	if err != nil {
		return nil, fmt.Errorf("read claude transcript %s: %w", conversationID, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read claude transcript %s: %w", conversationID, err)
	}
	defer f.Close()
	turns, err := parseTranscript(f)
	if err != nil {
		return nil, fmt.Errorf("read claude transcript %s: %w", conversationID, err)
	}
	return turns, nil
}

// entry is one line of a transcript, reduced to what read-back uses.
type entry struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        string          `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	IsAPIError        bool            `json:"isApiErrorMessage"`
	Error             json.RawMessage `json:"error"`
	Timestamp         string          `json:"timestamp"`
	Message           *wireMessage    `json:"message"`
	Attachment        *struct {
		Type   string `json:"type"`
		Prompt string `json:"prompt"`
	} `json:"attachment"`
	CompactMetadata *compactMetadata `json:"compactMetadata"`
}

// parseTranscript builds turns from transcript lines.
func parseTranscript(r io.Reader) ([]TranscriptTurn, error) {
	byID := make(map[string]*entry)
	leaf := ""
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e entry
			if jerr := json.Unmarshal(line, &e); jerr == nil && e.UUID != "" && !e.IsSidechain {
				switch e.Type {
				case "user", "assistant", "attachment", "system":
					byID[e.UUID] = &e
					leaf = e.UUID
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}

	// Walk from the newest entry to the root; a compaction boundary links
	// to what came before it through logicalParentUuid.
	var chain []*entry
	seen := make(map[string]bool)
	for id := leaf; id != "" && !seen[id]; {
		seen[id] = true
		e, ok := byID[id]
		if !ok {
			break
		}
		chain = append(chain, e)
		id = e.ParentUUID
		if id == "" {
			id = e.LogicalParentUUID
		}
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}

	var (
		turns []TranscriptTurn
		// cur indexes the turn entries go into; -1 between turns.
		cur = -1
		// notices wait for the next turn when a compaction falls between
		// turns.
		notices []TranscriptPart
		// usage is each turn's usage by message id: the CLI writes a line
		// per content block, each carrying its message's usage.
		usage []map[string]wireUsage
		// answered are the tool parts of the current turn whose results
		// came since its last assistant entry.
		answered []int
	)
	open := func(e *entry) *TranscriptTurn {
		turns = append(turns, TranscriptTurn{PromptID: e.UUID, State: TurnComplete, Parts: notices})
		usage = append(usage, make(map[string]wireUsage))
		notices = nil
		cur = len(turns) - 1
		turns[cur].Started, _ = time.Parse(time.RFC3339Nano, e.Timestamp)
		return &turns[cur]
	}
	ensure := func(e *entry) *TranscriptTurn {
		if cur < 0 {
			return open(e)
		}
		return &turns[cur]
	}
	for _, e := range chain {
		switch e.Type {
		case "user":
			if e.Message == nil || e.IsMeta || e.IsCompactSummary {
				continue
			}
			texts, results := e.Message.userContent()
			text := strings.Join(texts, "\n\n")
			interrupted := strings.HasPrefix(strings.TrimSpace(text), interruptedPrefix)
			if len(results) == 0 && !interrupted {
				t := open(e)
				t.UserText = text
				t.Point = e.UUID
				answered = nil
				continue
			}
			t := ensure(e)
			for _, res := range results {
				if i := t.foldResult(res); i >= 0 {
					answered = append(answered, i)
				}
			}
			t.Point = e.UUID
			if interrupted {
				if strings.Contains(text, interruptedAtTool) {
					// C-TURN-17, C-TURN-18: the CLI's answer to the call it
					// was stopped in came after the stop; the call reads
					// back cancelled, as every client saw it.
					for _, i := range answered {
						t.Parts[i].unfold()
					}
				}
				t.State = TurnCancelled
				cur = -1
				answered = nil
			}
		case "assistant":
			if e.Message == nil {
				continue
			}
			t := ensure(e)
			t.Point = e.UUID
			if failed := e.IsAPIError || hasValue(e.Error); failed || e.Message.Model == "<synthetic>" {
				if failed {
					t.State = TurnError
					t.Error = strings.Join(e.Message.texts(), "\n")
					t.ErrorType = "api_error"
				}
				continue
			}
			answered = nil
			if u := e.Message.Usage; u != nil {
				usage[cur][e.Message.ID] = *u
			}
			if e.Message.Model != "" {
				t.Usage.Model = e.Message.Model
			}
			for _, b := range e.Message.blocks() {
				switch b.Type {
				case "text":
					t.Parts = append(t.Parts, TranscriptPart{Kind: PartMarkdown, Text: b.Text})
				case "thinking":
					t.Parts = append(t.Parts, TranscriptPart{Kind: PartReasoning, Text: b.Thinking})
				case "tool_use":
					input := string(b.Input)
					if input == "" {
						input = "{}"
					}
					t.Parts = append(t.Parts, TranscriptPart{Kind: PartToolCall, Tool: &agent.ToolCall{
						ID: b.ID, Name: b.Name, DisplayName: b.Name,
						Input: input, Invocation: invocation(b.Name, b.Input),
					}})
				}
			}
		case "attachment":
			if e.Attachment != nil && e.Attachment.Type == "queued_command" && cur >= 0 {
				t := &turns[cur]
				t.Steering = append(t.Steering, e.Attachment.Prompt)
				t.Point = e.UUID
			}
		case "system":
			if e.Subtype == "compact_boundary" && e.CompactMetadata != nil {
				notice := TranscriptPart{Kind: PartNotice, Text: e.CompactMetadata.notice()}
				if cur >= 0 {
					turns[cur].Parts = append(turns[cur].Parts, notice)
				} else {
					notices = append(notices, notice)
				}
			}
		}
	}
	for i := range turns {
		t := &turns[i]
		if e := byID[t.Point]; e != nil {
			t.Ended, _ = time.Parse(time.RFC3339Nano, e.Timestamp)
		}
		for _, u := range usage[i] {
			t.Usage.InputTokens += u.InputTokens
			t.Usage.OutputTokens += u.OutputTokens
			t.Usage.CacheRead += u.CacheReadInputTokens
		}
		// A prompt nothing answered (the process ended first) did not
		// complete.
		if t.State == TurnComplete && t.Point == t.PromptID && len(t.Parts) == 0 {
			t.State = TurnCancelled
		}
	}
	return turns, nil
}

// foldResult completes the tool call a tool result answers and returns
// its part's index, or -1 when no call of the turn has that id.
func (t *TranscriptTurn) foldResult(res toolResult) int {
	for i := len(t.Parts) - 1; i >= 0; i-- {
		p := &t.Parts[i]
		if p.Kind != PartToolCall || p.Tool.ID != res.ToolUseID {
			continue
		}
		p.ToolDone = true
		p.Tool.Success = !res.IsError
		out := res.text()
		if res.IsError {
			p.Tool.Error = out
			p.Denied = out == denyMessage
		} else {
			p.Tool.Output = out
			p.Tool.PastTense = pastTense(p.Tool.Name, json.RawMessage(p.Tool.Input))
		}
		return i
	}
	return -1
}

// unfold takes a tool call's result back out: the call did not finish.
func (p *TranscriptPart) unfold() {
	p.ToolDone, p.Denied = false, false
	p.Tool.Success = false
	p.Tool.Output, p.Tool.Error, p.Tool.PastTense = "", "", ""
}

// projectSlug is the CLI's folder name for a working directory: every
// UTF-16 unit that is not an ASCII letter or digit becomes '-', and a name
// longer than 200 is cut and suffixed with a hash of the path.
func projectSlug(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	var b strings.Builder
	for _, u := range units {
		if (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') {
			b.WriteByte(byte(u))
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) <= maxSlug {
		return s
	}
	var h int32
	for _, u := range units {
		h = h*31 + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return s[:maxSlug] + "-" + strconv.FormatInt(abs, 36)
}

// maxSlug is the longest folder name the CLI writes without a hash.
const maxSlug = 200

// transcriptPath is where the CLI writes conversation id run in cwd.
func transcriptPath(configDir, id, cwd string) string {
	return filepath.Join(configDir, "projects", projectSlug(resolveDir(cwd)), id+".jsonl")
}

// resolveDir is cwd as the CLI sees it: absolute, symlinks resolved.
func resolveDir(cwd string) string {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	return cwd
}

// findTranscript finds conversation id's transcript: under cwd's project
// folder (or one sharing a long slug's prefix), else under any project.
func findTranscript(configDir, id, cwd string) (string, error) {
	if cwd != "" {
		p := transcriptPath(configDir, id, cwd)
		if fileExists(p) {
			return p, nil
		}
	}
	dirs, err := os.ReadDir(filepath.Join(configDir, "projects"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no transcript for %s: %w", id, os.ErrNotExist)
		}
		return "", err
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		p := filepath.Join(configDir, "projects", d.Name(), id+".jsonl")
		if fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no transcript for %s: %w", id, os.ErrNotExist)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
