package cofold

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ahpd/ahpd/internal/agent"
)

// Host tools: the host serves them over MCP to every backend
// (internal/hosttools); cofold calls them at the endpoint its conversation
// was handed, with that conversation's own credential, so the host checks
// what a call may touch.
const (
	renameChatTool     = "rename_chat"
	sessionContextTool = "get_session_context"
)

// hostToolTimeout bounds one host tool call.
const hostToolTimeout = 30 * time.Second

func hostToolSpecs(t *agent.HostTools) []toolSpec {
	if t == nil {
		return nil
	}
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	var out []toolSpec
	if slices.Contains(t.Names, renameChatTool) {
		out = append(out, toolSpec{Name: renameChatTool,
			Description: "Rename this chat. Call it only when somebody asks for the chat to be renamed.",
			Properties:  map[string]any{"title": str("the new title")}, Required: []string{"title"}})
	}
	if slices.Contains(t.Names, sessionContextTool) {
		out = append(out, toolSpec{Name: sessionContextTool,
			Description: "Read the transcript of another chat a #chat: pointer names, through its endTurn.",
			Properties:  map[string]any{"chat": str("the chat's ahp-chat: link"), "endTurn": str("the last turn to read; the newest when left out")},
			Required:    []string{"chat"}})
	}
	return out
}

func isHostTool(name string) bool { return name == renameChatTool || name == sessionContextTool }

// bearer adds the conversation's credential to each request; it goes
// straight to the loopback endpoint, never through a proxy.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// callHostTool calls a host tool with args and returns its text; a tool
// error comes back as the error.
func callHostTool(ctx context.Context, t *agent.HostTools, name string, args map[string]any) (string, error) {
	if t == nil {
		return "", fmt.Errorf("the host offers no %s here", name)
	}
	ctx, cancel := context.WithTimeout(ctx, hostToolTimeout)
	defer cancel()
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 1, IdleConnTimeout: time.Second}
	defer tr.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "cofold"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: t.URL, HTTPClient: &http.Client{Transport: bearer{t.Token, tr}},
		MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return "", fmt.Errorf("reach the host's tools: %w", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", errors.New(b.String())
	}
	return bound(b.String()), nil
}
