package hosttools

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeHost records what the tools asked of it.
type fakeHost struct {
	mu      sync.Mutex
	renamed []string // caller.Chat → chat → title
	pages   []Page
	closed  []string
	made    []Delegation
}

func (f *fakeHost) RenameChat(_ context.Context, c Caller, chat, title string) error {
	if !strings.HasPrefix(chat, "ahp-chat:/"+c.Session) {
		return errors.New(chat + " is not a chat of this session")
	}
	f.mu.Lock()
	f.renamed = append(f.renamed, c.Chat+" "+chat+" "+title)
	f.mu.Unlock()
	return nil
}

func (f *fakeHost) ChatContext(_ context.Context, c Caller, chat, endTurn string) (string, error) {
	return "transcript of " + chat + " through " + endTurn, nil
}

func (f *fakeHost) ShowPage(_ context.Context, c Caller, p Page) (string, error) {
	f.mu.Lock()
	f.pages = append(f.pages, p)
	f.mu.Unlock()
	return "Opened canvas ahp-canvas:/x/y: Serving", nil
}

func (f *fakeHost) ClosePage(_ context.Context, c Caller, canvas string) error {
	f.mu.Lock()
	f.closed = append(f.closed, canvas)
	f.mu.Unlock()
	return nil
}

func (f *fakeHost) CreateSession(_ context.Context, c Caller, d Delegation) (string, error) {
	f.mu.Lock()
	f.made = append(f.made, d)
	f.mu.Unlock()
	return "New session created (copilot:/new).", nil
}

// bearer adds a credential to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + Path
}

func connect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	return client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
}

// callerSession serves a fake host's tools and connects as chat s1-a.
func callerSession(t *testing.T) (*fakeHost, *mcp.ClientSession) {
	t.Helper()
	host := &fakeHost{}
	s := New(host, nil)
	tok, err := s.Grant(Caller{Session: "s1", Chat: "ahp-chat:/s1-a"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := connect(t, serve(t, s), tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return host, cs
}

func text(r *mcp.CallToolResult) string {
	var out []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "")
}

// TestToolsOverMCP: a conversation's credential reaches the tools, bound to
// its chat; a bad argument is a tool error; a chat of another session is
// refused; no credential, a wrong one and a revoked one get 401.
func TestToolsOverMCP(t *testing.T) {
	host := &fakeHost{}
	s := New(host, nil)
	url := serve(t, s)
	tok, err := s.Grant(Caller{Session: "s1", Chat: "ahp-chat:/s1-a"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := connect(t, url, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "close_page,create_session,get_session_context,rename_chat,show_page" {
		t.Fatalf("tools %v", names)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call(RenameChat, map[string]any{"title": "  New   title "}); r.IsError || text(r) != "Renamed the chat: New title" {
		t.Fatalf("rename: %+v %q", r, text(r))
	}
	if r := call(RenameChat, map[string]any{"title": ""}); !r.IsError {
		t.Fatal("an empty title was taken")
	}
	if r := call(RenameChat, map[string]any{"title": "x", "chat": "ahp-chat:/s2-b"}); !r.IsError || !strings.Contains(text(r), "not a chat of this session") {
		t.Fatalf("another session's chat: %q", text(r))
	}
	if r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: RenameChat, Arguments: map[string]any{"title": 7}}); err == nil && !r.IsError {
		t.Fatal("a malformed argument was taken")
	}
	if r := call(GetSessionContext, map[string]any{"chat": "ahp-chat:/s1-c", "endTurn": "t3"}); r.IsError || text(r) != "transcript of ahp-chat:/s1-c through t3" {
		t.Fatalf("context: %q", text(r))
	}
	if got := strings.Join(host.renamed, "|"); got != "ahp-chat:/s1-a ahp-chat:/s1-a New title" {
		t.Fatalf("renamed %q", got)
	}

	for name, token := range map[string]string{"no credential": "", "a wrong credential": "not-a-credential"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %d", name, res.StatusCode)
		}
	}
	s.Revoke(tok)
	if _, err := connect(t, url, tok); err == nil {
		t.Fatal("a revoked credential still connects")
	}
}

// TestPageToolsOverMCP: show_page takes exactly one of url and path and
// bounds its title; close_page needs its canvas (C-CANV-10). What the host
// does with them is tested through the daemon (canvas_test.go there).
func TestPageToolsOverMCP(t *testing.T) {
	host, cs := callerSession(t)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call(ShowPage, map[string]any{"url": "http://127.0.0.1:3000/", "title": "  Dev   server "}); r.IsError {
		t.Fatalf("show_page: %q", text(r))
	}
	for name, args := range map[string]map[string]any{
		"neither url nor path": {"title": "x"},
		"both url and path":    {"url": "http://127.0.0.1:1/", "path": "a.html"},
		"a title too long":     {"path": "a.html", "title": strings.Repeat("t", maxLine+1)},
	} {
		if r := call(ShowPage, args); !r.IsError {
			t.Fatalf("%s was taken", name)
		}
	}
	if r := call(ClosePage, map[string]any{}); !r.IsError {
		t.Fatal("close_page without a canvas was taken")
	}
	if r := call(ClosePage, map[string]any{"canvas": "ahp-canvas:/x/y"}); r.IsError {
		t.Fatalf("close_page: %q", text(r))
	}
	if len(host.pages) != 1 || host.pages[0].Title != "Dev server" || host.pages[0].URL != "http://127.0.0.1:3000/" {
		t.Fatalf("pages %+v", host.pages)
	}
	if len(host.closed) != 1 || host.closed[0] != "ahp-canvas:/x/y" {
		t.Fatalf("closed %v", host.closed)
	}
}

// TestCreateSessionToolOverMCP: create_session needs a prompt and a title
// (at most 200 characters), takes relationship currentSession (the
// default) or independent, and workspace and worktree only for an
// independent session; a worktree must be a boolean. What the host does
// with a call is tested through the daemon (spawn_test.go there).
func TestCreateSessionToolOverMCP(t *testing.T) {
	host, cs := callerSession(t)
	call := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: CreateSession, Arguments: args})
		if err != nil {
			t.Fatalf("create_session: %v", err)
		}
		return r
	}
	if r := call(map[string]any{"prompt": "write the tests", "title": "  Tests "}); r.IsError || !strings.Contains(text(r), "New session created") {
		t.Fatalf("create_session: %q", text(r))
	}
	if r := call(map[string]any{"prompt": "p", "title": "t", "relationship": "independent", "workspace": "/w", "worktree": true}); r.IsError {
		t.Fatalf("an independent worktree session: %q", text(r))
	}
	for name, args := range map[string]map[string]any{
		"no prompt":                   {"title": "t"},
		"no title":                    {"prompt": "p"},
		"a title too long":            {"prompt": "p", "title": strings.Repeat("t", 201)},
		"an unknown relationship":     {"prompt": "p", "title": "t", "relationship": "child"},
		"a worktree for a chat":       {"prompt": "p", "title": "t", "worktree": true},
		"a workspace for a chat":      {"prompt": "p", "title": "t", "relationship": "currentSession", "workspace": "/w"},
		"a prompt past its bound":     {"prompt": strings.Repeat("p", maxPromptBytes+1), "title": "t"},
		"a worktree that is a string": {"prompt": "p", "title": "t", "relationship": "independent", "worktree": "yes"},
	} {
		if r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: CreateSession, Arguments: args}); err == nil && !r.IsError {
			t.Errorf("%s was taken", name)
		}
	}
	want := []Delegation{
		{Prompt: "write the tests", Title: "Tests", Relationship: RelationshipCurrentSession},
		{Prompt: "p", Title: "t", Relationship: RelationshipIndependent, Workspace: "/w", Worktree: true},
	}
	if !slices.Equal(host.made, want) {
		t.Fatalf("delegations %+v, want %+v", host.made, want)
	}
}
