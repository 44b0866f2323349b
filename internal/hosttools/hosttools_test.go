package hosttools

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeHost records what the tools asked of it.
type fakeHost struct {
	mu      sync.Mutex
	renamed []string // caller.Chat → chat → title
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
	if strings.Join(names, ",") != "get_session_context,rename_chat" && strings.Join(names, ",") != "rename_chat,get_session_context" {
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
