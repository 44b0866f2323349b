package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/canvas"
	"github.com/ahpd/ahpd/internal/canvas/showpage"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Canvases through the daemon's websocket: show_page and close_page are
// called over the host's MCP endpoint with the credential the script
// agent's conversation was handed, as an agent calls them.

// dialOld connects a client that speaks protocol 0.9.0, which knows no
// canvas (C-CANV-12).
func dialOld(t *testing.T, url, token, id string) *ahptest.Client {
	t.Helper()
	c := ahptest.Dial(t, url, token)
	c.ID = id
	res := c.MustCall("initialize", map[string]any{
		"channel": ahp.RootURI, "protocolVersions": []string{"0.9.0"}, "clientId": id, "initialSubscriptions": []string{ahp.RootURI},
	})
	var r ahp.InitializeResult
	if err := json.Unmarshal(res, &r); err != nil || r.ProtocolVersion != "0.9.0" {
		t.Fatalf("initialize at 0.9.0: %s", res)
	}
	return c
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// hostTool calls one host tool as the conversation holding tools would,
// and returns its text and whether it was a tool error.
func hostTool(t *testing.T, tools *agent.HostTools, name string, args map[string]any) (string, bool) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "canvas-test"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: tools.URL, HTTPClient: &http.Client{Transport: bearerTransport{tools.Token}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect to the host tools: %v", err)
	}
	defer cs.Close()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, ""), r.IsError
}

var canvasURIRe = regexp.MustCompile(`ahp-canvas:/[A-Za-z0-9_-]+/[0-9a-f-]{36}`)

// showPage calls show_page and returns the canvas it opened.
func showPage(t *testing.T, tools *agent.HostTools, args map[string]any) string {
	t.Helper()
	text, isErr := hostTool(t, tools, "show_page", args)
	if isErr {
		t.Fatalf("show_page %v: %s", args, text)
	}
	uri := canvasURIRe.FindString(text)
	if uri == "" {
		t.Fatalf("show_page named no canvas: %q", text)
	}
	return uri
}

// toolsOf opens chat's conversation with a turn and returns the host
// tools it was handed.
func toolsOf(t *testing.T, e *testEnv, c *ahptest.Client, chatURI string) *agent.HostTools {
	t.Helper()
	before := len(e.script.Opens())
	if end := sendTurn(t, c, chatURI, "open-"+chatURI[len(chatURI)-4:], "hello"); end.Type() != "chat/turnComplete" {
		t.Fatalf("turn ended %s", end.Raw)
	}
	opens := e.script.Opens()
	if len(opens) <= before || opens[len(opens)-1].HostTools == nil {
		t.Fatalf("the conversation was handed no host tools (%d opens)", len(opens))
	}
	return opens[len(opens)-1].HostTools
}

func canvasState(t *testing.T, raw json.RawMessage) ahp.CanvasState {
	t.Helper()
	var s ahp.CanvasState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("canvas state: %v\n%s", err, raw)
	}
	return s
}

func hasKey(raw json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	_, ok := m[key]
	return ok
}

func refs(cs []ahp.CanvasReference) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Resource)
	}
	return out
}

// expectGone checks a subscription answers -32008 "Canvas is no longer
// available: <uri>" (C-CANV-09).
func expectGone(t *testing.T, c *ahptest.Client, uri string) {
	t.Helper()
	_, rerr := c.Call("subscribe", map[string]any{"channel": uri})
	if rerr == nil || rerr.Code != -32008 || rerr.Message != "Canvas is no longer available: "+uri {
		t.Fatalf("subscribe %s: %v", uri, rerr)
	}
}

func devServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "dev server") }))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}

// TestCanvasesListedInOpeningOrder: ChatState.canvases lists one entry per
// canvas a plugin opened, in opening order, and has no key when the chat
// holds none; each canvas is its own channel holding a CanvasState; a
// plugin opens, draws on and closes them; a 0.9.0 connection is sent no
// canvas action and sees no canvases key.
// C-CHAT-15, C-CANV-01, C-CANV-02, C-CANV-03, C-CANV-04, C-CANV-05,
// C-CANV-09, C-CANV-10, C-CANV-12.
func TestCanvasesListedInOpeningOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	old := dialOld(t, e.d.URL(), e.cfg.ConnectionToken, "old")
	_, def := e.createSession(a, "ahp-session:/ca000001-0000-4000-8000-000000000001")
	st, _ := a.Subscribe(def)
	if hasKey(st, "canvases") {
		t.Fatalf("a chat with no canvas has a canvases key: %s", st)
	}
	old.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	writeFile(t, filepath.Join(e.workDir, "site", "index.html"), "<h1>site</h1>")
	writeFile(t, filepath.Join(e.workDir, "report.html"), "report")
	dev := devServer(t)

	first := showPage(t, tools, map[string]any{"path": "site/index.html", "title": "Site"})
	second := showPage(t, tools, map[string]any{"url": dev, "title": "Dev"})
	third := showPage(t, tools, map[string]any{"path": "report.html"})
	for _, uri := range []string{first, second, third} {
		if c, _, ok := canvas.Parse(uri); !ok || c != def {
			t.Fatalf("canvas %s is not ahp-canvas:/<base64url(%s)>/<uuid>", uri, def)
		}
	}
	want := []string{first, second, third}
	a.AwaitEnvelope("the third canvas listed", func(env ahptest.Envelope) bool {
		var cs []ahp.CanvasReference
		_ = env.Field("canvases", &cs)
		return env.Channel == def && env.Type() == ahp.ActionChatCanvasesChanged && strings.Join(refs(cs), " ") == strings.Join(want, " ")
	})
	if got := refs(chatOf(t, e.client("b"), def).Canvases); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("canvases %v, want %v", got, want)
	}
	if st, _ := dialOld(t, e.d.URL(), e.cfg.ConnectionToken, "old2").Subscribe(def); hasKey(st, "canvases") {
		t.Fatalf("a 0.9.0 connection's snapshot lists canvases: %s", st)
	}
	if _, rerr := old.Call("subscribe", map[string]any{"channel": first}); rerr == nil || rerr.Code != ahp.CodeInvalidRequest {
		t.Fatalf("a 0.9.0 connection subscribing to a canvas: %v", rerr)
	}

	raw, _ := a.Subscribe(second)
	cs := canvasState(t, raw)
	if cs.URL != dev || cs.Title != "Dev" || cs.Status != "Serving (HTTP 200)" || cs.ExtensionID != showpage.ExtensionID ||
		cs.ExtensionName != showpage.ExtensionName || cs.CanvasID != showpage.CanvasID || cs.InstanceID == "" {
		t.Fatalf("server canvas %+v", cs)
	}
	// The plugin draws on it again: canvas/stateChanged on its channel.
	if again := showPage(t, tools, map[string]any{"url": dev, "canvas": second, "status": "Rebuilt", "title": "Dev"}); again != second {
		t.Fatalf("redraw opened %s", again)
	}
	env := a.AwaitEnvelope("the redraw", func(env ahptest.Envelope) bool {
		return env.Channel == second && env.Type() == ahp.ActionCanvasStateChanged
	})
	var drawn ahp.CanvasState
	if err := env.Field("canvas", &drawn); err != nil || drawn.Status != "Rebuilt" || drawn.URL != dev {
		t.Fatalf("redraw %s", env.Raw)
	}

	// A canvas the plugin closes: the list loses it, its watcher is told it
	// has no url, and a subscription afterwards answers -32008.
	if text, isErr := hostTool(t, tools, "close_page", map[string]any{"canvas": second}); isErr {
		t.Fatalf("close_page: %s", text)
	}
	closed := a.AwaitEnvelope("the closed canvas's last state", func(env ahptest.Envelope) bool {
		return env.Channel == second && env.Type() == ahp.ActionCanvasStateChanged && strings.Contains(string(env.Action), chat.StatusClosed)
	})
	var last ahp.CanvasState
	_ = closed.Field("canvas", &last)
	if last.URL != "" {
		t.Fatalf("a closed canvas keeps its url: %s", closed.Raw)
	}
	expectGone(t, a, second)
	if got := refs(chatOf(t, a, def).Canvases); strings.Join(got, " ") != first+" "+third {
		t.Fatalf("after a close: %v", got)
	}
	for _, uri := range []string{first, third} {
		if text, isErr := hostTool(t, tools, "close_page", map[string]any{"canvas": uri}); isErr {
			t.Fatalf("close_page: %s", text)
		}
	}
	st, _ = e.client("c").Subscribe(def)
	if hasKey(st, "canvases") {
		t.Fatalf("a chat whose canvases all closed has a canvases key: %s", st)
	}

	// The 0.9.0 connection watched the whole time and was sent no canvas
	// action.
	sendTurn(t, old, def, "old-sync", "sync") // everything before it has been delivered
	for _, env := range old.Envelopes() {
		if strings.HasPrefix(env.Type(), "canvas/") || env.Type() == ahp.ActionChatCanvasesChanged || strings.HasPrefix(env.Channel, canvas.Scheme) {
			t.Fatalf("a 0.9.0 connection was sent %s", env.Raw)
		}
	}
}

// TestShowPageRefusals: show_page shows only a server on 127.0.0.1,
// localhost or [::1], and only a file inside the chat's directories;
// anything else is a tool error and opens no canvas. Another chat's
// canvas is not this chat's to draw on or close.
func TestShowPageRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/ca000002-0000-4000-8000-000000000001")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.html"), "SECRET")
	if err := os.Symlink(filepath.Join(outside, "secret.html"), filepath.Join(e.workDir, "link.html")); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string]map[string]any{
		"a public address":         {"url": "http://192.0.2.10:8080/"},
		"a name that is not local": {"url": "http://example.com/"},
		"a private address":        {"url": "http://10.1.2.3/"},
		"the unspecified address":  {"url": "http://0.0.0.0:3000/"},
		"credentials in the url":   {"url": "http://u:p@127.0.0.1:3000/"},
		"another scheme":           {"url": "file:///etc/passwd"},
		"a path climbing out":      {"path": "../" + filepath.Base(outside) + "/secret.html"},
		"an absolute path outside": {"path": filepath.Join(outside, "secret.html")},
		"a symlink out":            {"path": "link.html"},
		"a file that is not there": {"path": "missing.html"},
		"both a url and a path":    {"url": "http://127.0.0.1:1/", "path": "x.html"},
		"neither a url nor a path": {"title": "nothing"},
		"a canvas of no chat here": {"url": "http://127.0.0.1:1/", "canvas": canvas.NewURI("ahp-chat:/elsewhere")},
		"a canvas uri that is not": {"url": "http://127.0.0.1:1/", "canvas": "ahp-canvas:/k1"},
	} {
		text, isErr := hostTool(t, tools, "show_page", args)
		if !isErr {
			t.Errorf("%s was shown: %s", name, text)
		}
	}
	if st := chatOf(t, a, def); len(st.Canvases) != 0 {
		t.Fatalf("a refused show_page opened %v", refs(st.Canvases))
	}
	// A canvas of another chat of the session is not this one's.
	other := "ahp-chat:/ca000002-0000-4000-8000-0000000000c2"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	a.Subscribe(other)
	otherTools := toolsOf(t, e, a, other)
	theirs := showPage(t, otherTools, map[string]any{"url": devServer(t)})
	if text, isErr := hostTool(t, tools, "close_page", map[string]any{"canvas": theirs}); !isErr {
		t.Fatalf("a chat closed another chat's canvas: %s", text)
	}
	if text, isErr := hostTool(t, tools, "show_page", map[string]any{"url": devServer(t), "canvas": theirs}); !isErr {
		t.Fatalf("a chat drew on another chat's canvas: %s", text)
	}
	if got := refs(chatOf(t, a, other).Canvases); len(got) != 1 || got[0] != theirs {
		t.Fatalf("the other chat's canvases %v", got)
	}
}

// TestCanvasFilesServedConfined: a file canvas's url is the daemon's own,
// under a token of that canvas; it serves the page's folder read-only, and
// "..", encoded escapes, an absolute path and a symlink out read nothing;
// once closed, the url serves nothing. C-CANV-05, C-CANV-10.
func TestCanvasFilesServedConfined(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/ca000003-0000-4000-8000-000000000001")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "passwd"), "SECRET-OUTSIDE")
	writeFile(t, filepath.Join(e.workDir, "secret.env"), "SECRET-IN-CHAT-DIR")
	writeFile(t, filepath.Join(e.workDir, "site", "index.html"), "<h1>site</h1>")
	writeFile(t, filepath.Join(e.workDir, "site", "app.css"), "body{}")
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(e.workDir, "site", "out")); err != nil {
		t.Fatal(err)
	}
	uri := showPage(t, tools, map[string]any{"path": "site"})
	raw, _ := a.Subscribe(uri)
	cs := canvasState(t, raw)
	if !strings.HasPrefix(cs.URL, "http://127.0.0.1:") || !strings.Contains(cs.URL, canvas.FilesPath) || !strings.HasSuffix(cs.URL, "/index.html") || cs.Status != "Serving index.html" {
		t.Fatalf("file canvas %+v", cs)
	}
	if code, body := httpGet(t, cs.URL); code != 200 || body != "<h1>site</h1>" {
		t.Fatalf("the page: %d %q", code, body)
	}
	dir := strings.TrimSuffix(cs.URL, "index.html")
	if code, body := httpGet(t, dir+"app.css"); code != 200 || body != "body{}" {
		t.Fatalf("a file beside the page: %d %q", code, body)
	}
	for _, escape := range []string{
		"../secret.env", "%2e%2e/secret.env", "..%2fsecret.env", "..%5csecret.env", "out",
		"x/../../secret.env", "/" + strings.TrimPrefix(filepath.Join(outside, "passwd"), "/"),
	} {
		req, _ := http.NewRequest(http.MethodGet, dir+escape, nil)
		req.URL.RawPath = "" // sent as written
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 200 || strings.Contains(string(body), "SECRET") {
			t.Errorf("%s: %d %q", escape, res.StatusCode, body)
		}
	}
	if res, err := http.Post(cs.URL, "text/plain", strings.NewReader("x")); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("a write: %v %v", res.StatusCode, err)
	}
	if text, isErr := hostTool(t, tools, "close_page", map[string]any{"canvas": uri}); isErr {
		t.Fatal(text)
	}
	if code, _ := httpGet(t, cs.URL); code != http.StatusNotFound {
		t.Fatalf("a closed canvas's page answers %d", code)
	}
}

// TestCanvasClientDispatchRefused: no client action opens, draws on or
// closes a canvas (C-CANV-11): canvas/stateChanged on a canvas channel and
// chat/canvasesChanged on a chat are refused, and nothing changes.
func TestCanvasClientDispatchRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/ca000004-0000-4000-8000-000000000001")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	dev := devServer(t)
	uri := showPage(t, tools, map[string]any{"url": dev, "title": "Mine"})
	a.Subscribe(uri)

	draw := map[string]any{"type": "canvas/stateChanged", "canvas": map[string]any{
		"instanceId": "x", "extensionId": "client", "canvasId": "evil", "title": "Drawn by a client", "url": "http://192.0.2.1/"}}
	if env := a.AwaitEcho(a.Dispatch(uri, draw)); env.RejectionReason != "Action is not client-dispatchable." {
		t.Fatalf("a client drew on a canvas: %s", env.Raw)
	}
	fresh := canvas.NewURI(def)
	if env := a.AwaitEcho(a.Dispatch(fresh, draw)); env.RejectionReason == "" {
		t.Fatalf("a client opened a canvas: %s", env.Raw)
	}
	list := map[string]any{"type": "chat/canvasesChanged", "canvases": []map[string]any{{"resource": fresh}}}
	if env := a.AwaitEcho(a.Dispatch(def, list)); env.RejectionReason != "Action is not client-dispatchable." {
		t.Fatalf("a client listed a canvas: %s", env.Raw)
	}
	closeAll := map[string]any{"type": "chat/canvasesChanged"}
	if env := a.AwaitEcho(a.Dispatch(def, closeAll)); env.RejectionReason != "Action is not client-dispatchable." {
		t.Fatalf("a client closed the canvases: %s", env.Raw)
	}
	// Sent to the session, a chat action goes to its default chat, which
	// refuses it the same way.
	if env := a.AwaitEcho(a.Dispatch("ahp-session:/ca000004-0000-4000-8000-000000000001", closeAll)); env.RejectionReason == "" {
		t.Fatalf("a client closed the canvases through the session: %s", env.Raw)
	}
	if got := refs(chatOf(t, e.client("b"), def).Canvases); len(got) != 1 || got[0] != uri {
		t.Fatalf("canvases after refused actions: %v", got)
	}
	raw, _ := e.client("c").Subscribe(uri)
	if cs := canvasState(t, raw); cs.Title != "Mine" || cs.URL != dev {
		t.Fatalf("canvas after a refused draw: %+v", cs)
	}
	expectGone(t, a, fresh)
}

// TestCanvasesSurviveRestart: a chat's canvases are stored before they are
// said, so a restart keeps them in their order; a file canvas is served
// again under a new token (the old url serves nothing), and a server
// canvas does not reuse its stored url until the agent shows it again.
func TestCanvasesSurviveRestart(t *testing.T) {
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/ca000005-0000-4000-8000-000000000001")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	writeFile(t, filepath.Join(e.workDir, "page.html"), "page")
	dev := devServer(t)
	server := showPage(t, tools, map[string]any{"url": dev, "title": "Dev"})
	file := showPage(t, tools, map[string]any{"path": "page.html", "title": "Page"})
	raw, _ := a.Subscribe(file)
	before := canvasState(t, raw)
	// Stored before it was said: the record holds both canvases the moment
	// show_page has answered, with no flush, and never a url.
	rec, ok, err := e.d.Store().Chat(context.Background(), def)
	if err != nil || !ok {
		t.Fatalf("chat record: %v %v", ok, err)
	}
	meta := chat.ParseRecordMeta(rec.Meta)
	if len(meta.Canvases) != 2 || meta.Canvases[0].URI != server || meta.Canvases[1].URI != file ||
		strings.Contains(string(rec.Meta), dev) || strings.Contains(string(rec.Meta), canvas.FilesPath) {
		t.Fatalf("stored canvases: %s", rec.Meta)
	}

	e.restart()
	b := e.client("b")
	st := chatOf(t, b, def)
	if got := refs(st.Canvases); strings.Join(got, " ") != server+" "+file {
		t.Fatalf("after a restart: %v", got)
	}
	raw, _ = b.Subscribe(file)
	after := canvasState(t, raw)
	if after.URL == "" || after.URL == before.URL || after.Title != "Page" || after.InstanceID != before.InstanceID {
		t.Fatalf("file canvas after a restart %+v (before %+v)", after, before)
	}
	if code, body := httpGet(t, after.URL); code != 200 || body != "page" {
		t.Fatalf("the page after a restart: %d %q", code, body)
	}
	if code, _ := httpGet(t, strings.Replace(before.URL, hostPort(before.URL), hostPort(after.URL), 1)); code == 200 {
		t.Fatal("the url of the last process still serves")
	}
	raw, _ = b.Subscribe(server)
	if sc := canvasState(t, raw); sc.URL != "" || sc.Status != showpage.StatusRestarted || sc.Title != "Dev" {
		t.Fatalf("server canvas after a restart %+v", sc)
	}
}

func hostPort(u string) string {
	rest := strings.TrimPrefix(u, "http://")
	hp, _, _ := strings.Cut(rest, "/")
	return hp
}

// TestCanvasGoesWithItsChat: closing a chat (disposeChat) and removing it
// with its session (disposeSession) take its canvases: a watcher is told
// the canvas has no url, and a subscription afterwards answers -32008
// "Canvas is no longer available: <uri>". C-CANV-06, C-CANV-07, C-CANV-09.
func TestCanvasGoesWithItsChat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	sess, def := e.createSession(a, "ahp-session:/ca000006-0000-4000-8000-000000000001")
	other := "ahp-chat:/ca000006-0000-4000-8000-0000000000c2"
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	a.Subscribe(other)
	dev := devServer(t)
	closedOne := showPage(t, toolsOf(t, e, a, other), map[string]any{"url": dev})
	a.Subscribe(closedOne)
	a.Subscribe(def)
	kept := showPage(t, toolsOf(t, e, a, def), map[string]any{"url": dev})

	a.MustCall("disposeChat", map[string]any{"channel": other})
	a.AwaitEnvelope("the closed chat's canvas told it has no url", func(env ahptest.Envelope) bool {
		return env.Channel == closedOne && env.Type() == ahp.ActionCanvasStateChanged && !strings.Contains(string(env.Action), `"url"`)
	})
	expectGone(t, a, closedOne)
	// A chat created again under the same URI starts without them.
	a.MustCall("createChat", map[string]any{"channel": sess, "chat": other})
	if st, _ := a.Subscribe(other); hasKey(st, "canvases") {
		t.Fatalf("a chat created again holds the closed one's canvases: %s", st)
	}
	expectGone(t, a, closedOne)

	// Removing the session removes its chats, and their canvases.
	a.Subscribe(kept)
	a.MustCall("disposeSession", map[string]any{"channel": sess})
	expectGone(t, a, kept)
}

// TestCanvasesSurviveUnload: a canvas somebody watches keeps its chat
// loaded; once nobody does, the chat unloads (its file canvases are no
// longer served) and comes back with its canvases in order: a server
// canvas on its url, a file canvas served again.
func TestCanvasesSurviveUnload(t *testing.T) {
	t.Parallel() // it waits for idle timers; it runs beside the others (make test's time)
	e := newEnv(t, func(c *daemon.Config) { c.ChatIdleSeconds = 1 })
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/ca000007-0000-4000-8000-000000000001")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	writeFile(t, filepath.Join(e.workDir, "page.html"), "page")
	dev := devServer(t)
	server := showPage(t, tools, map[string]any{"url": dev})
	file := showPage(t, tools, map[string]any{"path": "page.html"})
	raw, _ := a.Subscribe(file)
	before := canvasState(t, raw)
	a.Notify("unsubscribe", map[string]any{"channel": def})

	ctx := context.Background()
	// Deliberately longer than idle (1 s) plus the actor's ticker: a chat
	// nobody watched would have unloaded by now.
	time.Sleep(2500 * time.Millisecond)
	if n := e.d.Host().OpenChats(ctx); n != 1 {
		t.Fatalf("a chat whose canvas is watched unloaded (%d open)", n)
	}
	a.Close()
	deadline := time.Now().Add(20 * time.Second)
	for e.d.Host().OpenChats(ctx) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle chat was never unloaded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := httpGet(t, before.URL); code != http.StatusNotFound {
		t.Fatalf("an unloaded chat's file canvas still serves: %d", code)
	}

	b := e.client("b")
	if got := refs(chatOf(t, b, def).Canvases); strings.Join(got, " ") != server+" "+file {
		t.Fatalf("after an unload: %v", got)
	}
	raw, _ = b.Subscribe(server)
	if sc := canvasState(t, raw); sc.URL != dev || sc.Status != "Serving (HTTP 200)" {
		t.Fatalf("server canvas after an unload %+v", sc)
	}
	raw, _ = b.Subscribe(file)
	after := canvasState(t, raw)
	if code, body := httpGet(t, after.URL); code != 200 || body != "page" {
		t.Fatalf("file canvas after an unload: %d %q", code, body)
	}
}

// TestCanvasReconnect: a client that lost its socket while a canvas was
// drawn on gets that drawing replayed on reconnect, and a canvas closed
// meanwhile is answered missing.
func TestCanvasReconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.client("a")
	_, def := e.createSession(a, "ahp-session:/ca000008-0000-4000-8000-000000000001")
	a.Subscribe(def)
	tools := toolsOf(t, e, a, def)
	dev := devServer(t)
	live := showPage(t, tools, map[string]any{"url": dev, "title": "Live"})
	gone := showPage(t, tools, map[string]any{"url": dev, "title": "Gone"})
	a.Subscribe(live)
	a.Subscribe(gone)
	seen := lastSeq(a)
	a.Close()

	showPage(t, tools, map[string]any{"url": dev, "canvas": live, "status": "Redrawn while a was away"})
	if text, isErr := hostTool(t, tools, "close_page", map[string]any{"canvas": gone}); isErr {
		t.Fatal(text)
	}
	a2 := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	a2.ID = "a"
	raw := a2.MustCall("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "a", "lastSeenServerSeq": seen, "subscriptions": []string{ahp.RootURI, def, live, gone}})
	var res reconnectResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	redrawn := false
	for _, env := range res.Actions {
		if strings.Contains(string(env), `"channel":"`+live+`"`) && strings.Contains(string(env), "Redrawn while a was away") {
			redrawn = true
		}
	}
	if res.Type != "replay" || !redrawn || len(res.Missing) != 1 || res.Missing[0] != gone {
		t.Fatalf("reconnect: %s", raw)
	}
}
