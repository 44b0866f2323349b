package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/ahpclient"
)

// newExport is `ahpd export SESSION`: a client verb that reads whole
// transcripts over the protocol (a subscribe with a view, then fetchTurns
// down to the first turn) and writes them as Markdown or JSON.
func newExport() *cobra.Command {
	var f clientFlags
	var chat, format, output string
	cmd := &cobra.Command{
		Use:   "export SESSION [--chat CHAT] [--format markdown|json] [-o FILE]",
		Short: "Write a session's or a chat's whole transcript as Markdown or JSON",
		Long: "export reads every turn of the session's chats (or of --chat alone) from the running daemon and writes\n" +
			"them to stdout or -o FILE: markdown, the user's messages and the answers with tool calls summarised in\n" +
			"a line each; or json, {session, title, chats: [{chat, title, turns}]} with each turn as the protocol\n" +
			"states it. The token needs session:state and chat:turns.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if format != "markdown" && format != "json" {
				return usageErr("%s: --format is markdown or json, not %q", cmd.CommandPath(), format)
			}
			ctx := cmd.Context()
			c, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			ex, err := readExport(ctx, c, a[0], chat)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var file *os.File
			if output != "" && output != "-" {
				// Written beside the target and renamed over it once whole:
				// a failed export leaves no truncated file, and the file is
				// new (0600), never a symlink's target or an old file's mode.
				file, err = os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*")
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				defer os.Remove(file.Name()) // gone once renamed
				out = file
			}
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(ex)
			} else {
				err = writeMarkdown(out, ex, time.Now())
			}
			if file != nil {
				if cerr := file.Close(); err == nil {
					err = cerr
				}
				if err == nil {
					err = os.Rename(file.Name(), output)
				}
			}
			if err != nil {
				return fmt.Errorf("export: write: %w", err)
			}
			return nil
		},
	}
	f.addDaemon(cmd)
	cmd.Flags().StringVar(&chat, "chat", "", "export this chat of the session alone")
	cmd.Flags().StringVar(&format, "format", "markdown", "markdown or json")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file (created 0600) instead of stdout")
	return cmd
}

// export is what `ahpd export` writes as JSON.
type export struct {
	Session string       `json:"session"`
	Title   string       `json:"title"`
	Chats   []exportChat `json:"chats"`
}

type exportChat struct {
	Chat  string            `json:"chat"`
	Title string            `json:"title"`
	Turns []json.RawMessage `json:"turns"`
	// ActiveTurn is a turn still running when it was read, as the
	// protocol states it.
	ActiveTurn json.RawMessage `json:"activeTurn,omitempty"`
}

// exportPage is the view a chat is subscribed with and then paged by.
const exportPage = 50

// readExport reads the session's state, then each chat it names (or chat
// alone) whole.
func readExport(ctx context.Context, c *ahpclient.Client, session, chat string) (*export, error) {
	loaded := make(chan turnsLoaded, 16)
	go forwardTurnsLoaded(c, loaded)
	raw, err := c.Subscribe(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", session, err)
	}
	var st ahp.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("export %s: session state: %w", session, err)
	}
	ex := &export{Session: session, Title: st.Title, Chats: []exportChat{}}
	for _, cs := range st.Chats {
		if chat != "" && cs.Resource != chat {
			continue
		}
		ch, err := readChat(ctx, c, cs.Resource, loaded)
		if err != nil {
			return nil, err
		}
		ch.Title = cs.Title
		ex.Chats = append(ex.Chats, ch)
	}
	if chat != "" && len(ex.Chats) == 0 {
		return nil, fmt.Errorf("export: %s is not a chat of %s", chat, session)
	}
	return ex, nil
}

// turnsLoaded is a chat/turnsLoaded envelope: a page of older turns.
type turnsLoaded struct {
	chat string
	page struct {
		Turns           []json.RawMessage `json:"turns"`
		TurnsNextCursor *string           `json:"turnsNextCursor"`
	}
}

// forwardTurnsLoaded reads every frame the daemon pushes, so the
// connection never stalls, and hands on the pages fetchTurns asked for;
// it ends with the connection.
func forwardTurnsLoaded(c *ahpclient.Client, out chan<- turnsLoaded) {
	for fr := range c.Events() {
		if fr.Method != "action" {
			continue
		}
		var env ahpclient.Envelope
		if json.Unmarshal(fr.Params, &env) != nil || env.Type() != "chat/turnsLoaded" {
			continue
		}
		tl := turnsLoaded{chat: env.Channel}
		if json.Unmarshal(env.Action, &tl.page) != nil {
			continue
		}
		select {
		case out <- tl:
		default:
			// The pages waiting are not read (no fetch of ours waits):
			// dropped. chat/turnsLoaded goes to every subscriber and names
			// no cursor, so a page another client fetched of the same chat
			// at the same time can also be taken for ours (readChat's
			// dedupe by turn id keeps the transcript whole unless that page
			// reaches further back than ours).
		}
	}
	close(out)
}

// readChat subscribes to chat with a view of its newest turns and asks
// for older pages until the first turn.
func readChat(ctx context.Context, c *ahpclient.Client, chat string, loaded <-chan turnsLoaded) (exportChat, error) {
	var r struct {
		Snapshot struct {
			State struct {
				Turns           []json.RawMessage `json:"turns"`
				TurnsNextCursor *string           `json:"turnsNextCursor"`
				ActiveTurn      json.RawMessage   `json:"activeTurn"`
			} `json:"state"`
		} `json:"snapshot"`
	}
	if err := c.Call(ctx, "subscribe", map[string]any{"channel": chat, "view": map[string]any{"turns": exportPage}}, &r); err != nil {
		return exportChat{}, fmt.Errorf("export %s: %w", chat, err)
	}
	st := r.Snapshot.State
	ch := exportChat{Chat: chat, Turns: st.Turns, ActiveTurn: st.ActiveTurn}
	if ch.Turns == nil {
		ch.Turns = []json.RawMessage{}
	}
	seen := map[string]bool{}
	for _, t := range ch.Turns {
		seen[turnID(t)] = true
	}
	for cursor := st.TurnsNextCursor; cursor != nil; {
		if err := c.Call(ctx, "fetchTurns", map[string]any{"channel": chat, "cursor": *cursor}, nil); err != nil {
			return exportChat{}, fmt.Errorf("export %s: %w", chat, err)
		}
		page, err := awaitPage(ctx, c, chat, loaded)
		if err != nil {
			return exportChat{}, err
		}
		var older []json.RawMessage
		for _, t := range page.page.Turns {
			if id := turnID(t); !seen[id] {
				seen[id] = true
				older = append(older, t)
			}
		}
		if len(older) == 0 && page.page.TurnsNextCursor != nil && *page.page.TurnsNextCursor == *cursor {
			return exportChat{}, fmt.Errorf("export %s: fetchTurns made no progress at %s", chat, *cursor)
		}
		ch.Turns = append(older, ch.Turns...)
		cursor = page.page.TurnsNextCursor
	}
	return ch, nil
}

// awaitPage waits for the page the last fetchTurns on chat published.
func awaitPage(ctx context.Context, c *ahpclient.Client, chat string, loaded <-chan turnsLoaded) (turnsLoaded, error) {
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case tl, ok := <-loaded:
			if !ok {
				return turnsLoaded{}, fmt.Errorf("export %s: connection closed: %v", chat, c.Err())
			}
			if tl.chat == chat {
				return tl, nil
			}
		case <-ctx.Done():
			return turnsLoaded{}, ctx.Err()
		case <-timeout.C:
			return turnsLoaded{}, fmt.Errorf("export %s: no chat/turnsLoaded within 30s of fetchTurns", chat)
		}
	}
}

func turnID(raw json.RawMessage) string {
	var t struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &t)
	return t.ID
}

// writeMarkdown writes ex as a document: the session, each chat, and each
// turn's message and answer, a tool call summarised in a line.
func writeMarkdown(w io.Writer, ex *export, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nSession `%s`, exported %s.\n", orUntitled(ex.Title), ex.Session, now.UTC().Format(time.RFC3339))
	for _, ch := range ex.Chats {
		fmt.Fprintf(&b, "\n## %s\n\nChat `%s`, %d turns.\n", orUntitled(ch.Title), ch.Chat, len(ch.Turns))
		for _, raw := range ch.Turns {
			var t ahp.Turn
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("turn %s of %s: %w", turnID(raw), ch.Chat, err)
			}
			writeTurn(&b, &t)
		}
		if len(ch.ActiveTurn) > 0 {
			var t ahp.Turn
			if json.Unmarshal(ch.ActiveTurn, &t) == nil {
				t.State = "running"
				writeTurn(&b, &t)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTurn(b *strings.Builder, t *ahp.Turn) {
	fmt.Fprintf(b, "\n### User\n\n")
	if t.StartedAt != "" {
		fmt.Fprintf(b, "<sub>turn %s, %s</sub>\n\n", t.ID, t.StartedAt)
	}
	b.WriteString(strings.TrimSpace(t.Message.Text) + "\n")
	for _, at := range t.Message.Attachments {
		fmt.Fprintf(b, "\n- attached: %s\n", attachmentName(at))
	}
	fmt.Fprintf(b, "\n### Assistant\n\n")
	wrote := false
	for i := range t.ResponseParts {
		if line := partMarkdown(&t.ResponseParts[i]); line != "" {
			b.WriteString(line + "\n\n")
			wrote = true
		}
	}
	switch {
	case t.State == ahp.TurnCancelled:
		b.WriteString("_(cancelled)_\n\n")
	case t.State == "running":
		b.WriteString("_(still running when exported)_\n\n")
	case !wrote:
		b.WriteString("_(no answer)_\n\n")
	}
}

// partMarkdown is one response part as Markdown: text as it is, a tool
// call as one quoted line, reasoning left out.
func partMarkdown(p *ahp.ResponsePart) string {
	switch p.Kind {
	case ahp.PartMarkdown:
		return strings.TrimSpace(p.Content)
	case ahp.PartToolCall:
		if p.ToolCall == nil {
			return ""
		}
		tc := p.ToolCall
		name := tc.DisplayName
		if name == "" {
			name = tc.ToolName
		}
		what := tc.PastTenseMessage.String()
		if what == "" {
			what = tc.InvocationMessage.String()
		}
		line := fmt.Sprintf("> **Tool** `%s` (%s)", name, tc.Status)
		if what = oneLine(what); what != "" {
			line += ": " + what
		}
		return line
	case ahp.PartSystemNotification:
		return "> _" + oneLine(p.Content) + "_"
	case ahp.PartInputRequest:
		if p.Response != "" {
			return "> **Asked**, answered: " + oneLine(p.Response)
		}
		return "> **Asked** the user"
	case ahp.PartError:
		if p.Error != nil {
			return "> **Error**: " + oneLine(p.Error.Message)
		}
		return "> **Error**"
	case ahp.PartContentRef:
		return fmt.Sprintf("> content: %s", p.URI)
	}
	return ""
}

func attachmentName(at ahp.MessageAttachment) string {
	for _, s := range []string{at.Label, string(at.URI), string(at.Resource)} {
		if s != "" {
			return s
		}
	}
	return "an attachment"
}

func orUntitled(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return "(untitled)"
	}
	return s
}
