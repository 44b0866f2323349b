// Package hosttools serves the host's own tools to agents over the Model
// Context Protocol (streamable HTTP, github.com/modelcontextprotocol/go-sdk):
// rename_chat (the deferred title strategy, C-COMP-30),
// get_session_context (the transcript a #chat: pointer names),
// show_page and close_page (a canvas on a page, internal/canvas/showpage),
// and create_session (delegated work: a new chat of the session, or a new
// session beside it, in a git worktree of its own when asked).
//
// Each open conversation gets a credential of its own (Grant): a call is
// made as the chat it came from and can act only on that chat's session.
// The backend is handed the endpoint and the credential when its
// conversation opens (agent.OpenParams.HostTools); an in-process backend
// may call the same tools directly (Call).
package hosttools

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the daemon serves the tools, on its own port.
const Path = "/ahp-mcp"

// ServerName is the MCP server's name: a backend that prefixes tool names
// with it (Claude: mcp__ahp__rename_chat) shows the tools so.
const ServerName = "ahp"

// Tool names.
const (
	RenameChat        = "rename_chat"
	GetSessionContext = "get_session_context"
	ShowPage          = "show_page"
	ClosePage         = "close_page"
	CreateSession     = "create_session"
)

// Names are the tools every agent is offered.
var Names = []string{RenameChat, GetSessionContext, ShowPage, ClosePage, CreateSession}

// Confirm are the tools a backend that can ask has the user confirm before
// each call, as VS Code's host does: create_session starts work, as the
// session's owner, beyond the chat it is called from.
var Confirm = []string{CreateSession}

// Relationships of a create_session call: a new chat of the caller's
// session (the default), or a session of its own beside it.
const (
	RelationshipCurrentSession = "currentSession"
	RelationshipIndependent    = "independent"
)

// Delegation is a create_session call: work to start with a prompt.
type Delegation struct {
	// Prompt is the new chat's first message; Title its title.
	Prompt, Title string
	// Relationship is RelationshipCurrentSession or RelationshipIndependent.
	Relationship string
	// Workspace is the folder an independent session works in (a path or
	// a file: URI); the caller's own folder when "".
	Workspace string
	// Worktree: an independent session in a git worktree of its own, on
	// a new branch from the workspace's current one.
	Worktree bool
}

// Page is a show_page call: a page to show on a canvas of the calling chat.
type Page struct {
	// URL is a server the agent started on 127.0.0.1, localhost or [::1];
	// Path a file of the chat's directories. Exactly one is given.
	URL, Path string
	// Title and Status are shown on the canvas.
	Title, Status string
	// Canvas is a canvas of the chat to show the page on; empty opens one.
	Canvas string
}

// Caller is who a tool call came from: a chat's conversation.
type Caller struct {
	Session, Chat string
}

// Host is what the tools act through. Its methods check that what a call
// names is the caller's to touch.
type Host interface {
	// RenameChat renames chat, a chat of caller's session.
	RenameChat(ctx context.Context, caller Caller, chat, title string) error
	// ChatContext is the transcript of chat through endTurn ("" the
	// newest turn), as a #chat: pointer names it, read under the
	// caller's session's grants.
	ChatContext(ctx context.Context, caller Caller, chat, endTurn string) (string, error)
	// ShowPage opens (or redraws) a canvas of the caller's chat on a page
	// and says what it did.
	ShowPage(ctx context.Context, caller Caller, page Page) (string, error)
	// ClosePage closes a canvas of the caller's chat.
	ClosePage(ctx context.Context, caller Caller, canvas string) error
	// CreateSession starts delegated work as the caller's session's owner
	// and says what it made.
	CreateSession(ctx context.Context, caller Caller, d Delegation) (string, error)
}

// maxCredentials bounds the open credentials: one per open conversation.
const maxCredentials = 1 << 16

// Server mints credentials and serves the tools.
type Server struct {
	host Host
	log  *slog.Logger
	mcp  http.Handler

	mu      sync.Mutex
	callers map[string]Caller // credential → caller
}

// New returns a server of host's tools.
func New(host Host, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{host: host, log: log, callers: make(map[string]Caller)}
	// Stateless: every request carries its credential and keeps no MCP
	// session, so nothing grows with the calls an agent makes.
	s.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		caller, ok := callerFrom(r.Context())
		if !ok {
			return nil
		}
		return s.serverFor(caller)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log, MaxRequestBodyBytes: 1 << 20})
	return s
}

// ErrTooMany refuses a credential past maxCredentials.
var ErrTooMany = errors.New("too many open host tool credentials")

// Grant mints the credential of a conversation of caller's chat; Revoke it
// when the conversation closes.
func (s *Server) Grant(caller Caller) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mint host tool credential: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.callers) >= maxCredentials {
		return "", ErrTooMany
	}
	s.callers[tok] = caller
	return tok, nil
}

// Revoke forgets a credential; a call with it is refused from then on.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	delete(s.callers, token)
	s.mu.Unlock()
}

type callerKey struct{}

func callerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// ServeHTTP serves a tool request: a credential Grant minted, as a bearer
// token, or 401.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	caller, known := s.callers[strings.TrimSpace(tok)]
	s.mu.Unlock()
	if !ok || !known {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ahpd host tools"`)
		http.Error(w, "ahpd host tools need the credential the conversation was handed", http.StatusUnauthorized)
		return
	}
	s.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
}

// renameArgs and contextArgs are the tools' inputs.
type renameArgs struct {
	Title string `json:"title" jsonschema:"the chat's new title"`
	Chat  string `json:"chat,omitempty" jsonschema:"the chat to rename (an ahp-chat: URI of this session); the chat the call comes from when left out"`
}

type contextArgs struct {
	Chat    string `json:"chat" jsonschema:"the chat a #chat: pointer names (its ahp-chat: URI)"`
	EndTurn string `json:"endTurn,omitempty" jsonschema:"the last turn to read (the pointer's endTurn); the newest when left out"`
}

type pageArgs struct {
	URL    string `json:"url,omitempty" jsonschema:"a web server you started on this machine: http or https on 127.0.0.1, localhost or [::1] (no other address is shown)"`
	Path   string `json:"path,omitempty" jsonschema:"a file in this chat's directories (relative to its first directory, or absolute inside them); the host serves it and its folder read-only"`
	Title  string `json:"title,omitempty" jsonschema:"the canvas's title"`
	Status string `json:"status,omitempty" jsonschema:"a status to show on the canvas; what the host found when left out"`
	Canvas string `json:"canvas,omitempty" jsonschema:"an ahp-canvas: URI show_page returned, to show the page on that canvas again instead of opening another"`
}

type createArgs struct {
	Prompt       string `json:"prompt" jsonschema:"the first message of the new chat: the whole task, as you would give it to a colleague who has not seen this conversation"`
	Title        string `json:"title" jsonschema:"a short title for the new chat (at most 200 characters)"`
	Relationship string `json:"relationship,omitempty" jsonschema:"currentSession (the default): a new chat in this session, in its folders; independent: a separate session beside this one — only when the user asks for a separate or sibling session"`
	Workspace    string `json:"workspace,omitempty" jsonschema:"for an independent session: the folder it works in (an absolute path or file: URI); this session's folder when left out"`
	Worktree     *bool  `json:"worktree,omitempty" jsonschema:"for an independent session: true to work in a new git worktree of the workspace's repository, on a branch of its own, so its changes stay apart from this session's"`
}

type closeArgs struct {
	Canvas string `json:"canvas" jsonschema:"the ahp-canvas: URI show_page returned"`
}

// serverFor is the MCP server of one caller: the same tools, bound to it.
func (s *Server) serverFor(caller Caller) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "ahpd host tools"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: RenameChat, Description: "Rename a chat of this session, when somebody asks for it. The title is shown to every client."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in renameArgs) (*mcp.CallToolResult, any, error) {
			text, err := s.Call(ctx, caller, RenameChat, map[string]string{"title": in.Title, "chat": in.Chat})
			return result(text, err), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: GetSessionContext, Description: "Read the transcript a #chat: pointer names: the chat's turns through endTurn."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in contextArgs) (*mcp.CallToolResult, any, error) {
			text, err := s.Call(ctx, caller, GetSessionContext, map[string]string{"chat": in.Chat, "endTurn": in.EndTurn})
			return result(text, err), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: ShowPage, Description: "Show a page to the people in this chat, on a canvas beside it: a web server you started on this machine (url) or a file of this chat's directories (path). Returns the canvas, to show a page on it again or close it."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pageArgs) (*mcp.CallToolResult, any, error) {
			text, err := s.Call(ctx, caller, ShowPage, map[string]string{"url": in.URL, "path": in.Path, "title": in.Title, "status": in.Status, "canvas": in.Canvas})
			return result(text, err), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: ClosePage, Description: "Close a canvas show_page opened in this chat."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in closeArgs) (*mcp.CallToolResult, any, error) {
			text, err := s.Call(ctx, caller, ClosePage, map[string]string{"canvas": in.Canvas})
			return result(text, err), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: CreateSession, Description: "Delegate work: start a new chat with a prompt, in this session or (relationship independent) in a separate session, in a git worktree of its own when worktree is true. Returns where the work runs."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createArgs) (*mcp.CallToolResult, any, error) {
			args := map[string]string{"prompt": in.Prompt, "title": in.Title, "relationship": in.Relationship, "workspace": in.Workspace}
			if in.Worktree != nil {
				args["worktree"] = fmt.Sprint(*in.Worktree)
			}
			text, err := s.Call(ctx, caller, CreateSession, args)
			return result(text, err), nil, nil
		})
	return srv
}

// result is a tool's answer: a bad call is a tool error the agent reads,
// never a protocol failure.
func result(text string, err error) *mcp.CallToolResult {
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// Call runs tool for caller with args: what an in-process backend calls,
// and what the MCP handlers run.
func (s *Server) Call(ctx context.Context, caller Caller, tool string, args map[string]string) (string, error) {
	switch tool {
	case RenameChat:
		title := strings.Join(strings.Fields(args["title"]), " ")
		if title == "" {
			return "", errors.New("rename_chat: title is required")
		}
		chat := args["chat"]
		if chat == "" {
			chat = caller.Chat
		}
		if err := s.host.RenameChat(ctx, caller, chat, title); err != nil {
			return "", fmt.Errorf("rename_chat: %w", err)
		}
		s.log.Info("agent renamed a chat", "session", caller.Session, "chat", chat, "title", title)
		return "Renamed the chat: " + title, nil
	case GetSessionContext:
		if args["chat"] == "" {
			return "", errors.New("get_session_context: chat is required")
		}
		text, err := s.host.ChatContext(ctx, caller, args["chat"], args["endTurn"])
		if err != nil {
			return "", fmt.Errorf("get_session_context: %w", err)
		}
		return text, nil
	case ShowPage:
		page := Page{URL: args["url"], Path: args["path"], Title: oneLine(args["title"]), Status: oneLine(args["status"]), Canvas: strings.TrimSpace(args["canvas"])}
		if (page.URL == "") == (page.Path == "") {
			return "", errors.New("show_page: name exactly one of url and path")
		}
		if len(page.Title) > maxLine || len(page.Status) > maxLine {
			return "", fmt.Errorf("show_page: a title or status is at most %d bytes", maxLine)
		}
		text, err := s.host.ShowPage(ctx, caller, page)
		if err != nil {
			return "", fmt.Errorf("show_page: %w", err)
		}
		// The page's url is not logged (AHP-1.0.md §9).
		s.log.Info("agent showed a page", "session", caller.Session, "chat", caller.Chat)
		return text, nil
	case ClosePage:
		canvas := strings.TrimSpace(args["canvas"])
		if canvas == "" {
			return "", errors.New("close_page: canvas is required")
		}
		if err := s.host.ClosePage(ctx, caller, canvas); err != nil {
			return "", fmt.Errorf("close_page: %w", err)
		}
		return "Closed the canvas " + canvas, nil
	case CreateSession:
		d, err := delegation(args)
		if err != nil {
			return "", fmt.Errorf("create_session: %w", err)
		}
		text, err := s.host.CreateSession(ctx, caller, d)
		if err != nil {
			return "", fmt.Errorf("create_session: %w", err)
		}
		s.log.Info("agent delegated work", "session", caller.Session, "chat", caller.Chat, "relationship", d.Relationship, "worktree", d.Worktree)
		return text, nil
	}
	return "", fmt.Errorf("no host tool %q", tool)
}

// maxLine bounds a canvas's title and status.
const maxLine = 512

// Bounds of a create_session call.
const (
	maxPromptBytes = 64 << 10
	maxTitleRunes  = 200
)

// delegation reads a create_session call's arguments.
func delegation(args map[string]string) (Delegation, error) {
	d := Delegation{Prompt: strings.TrimSpace(args["prompt"]), Title: oneLine(args["title"]),
		Relationship: args["relationship"], Workspace: strings.TrimSpace(args["workspace"])}
	switch {
	case d.Prompt == "":
		return d, errors.New("prompt is required")
	case len(d.Prompt) > maxPromptBytes:
		return d, fmt.Errorf("the prompt is longer than %d bytes", maxPromptBytes)
	case d.Title == "":
		return d, errors.New("title is required")
	case len([]rune(d.Title)) > maxTitleRunes:
		return d, fmt.Errorf("the title is longer than %d characters", maxTitleRunes)
	}
	if d.Relationship == "" {
		d.Relationship = RelationshipCurrentSession
	}
	if d.Relationship != RelationshipCurrentSession && d.Relationship != RelationshipIndependent {
		return d, fmt.Errorf("relationship %q is neither %s nor %s", d.Relationship, RelationshipCurrentSession, RelationshipIndependent)
	}
	switch args["worktree"] {
	case "", "false":
	case "true":
		d.Worktree = true
	default:
		return d, fmt.Errorf("worktree must be a boolean, not %q", args["worktree"])
	}
	if d.Relationship == RelationshipCurrentSession && (d.Worktree || d.Workspace != "") {
		return d, errors.New("workspace and worktree are for relationship independent: a new chat works in its session's folders")
	}
	return d, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
