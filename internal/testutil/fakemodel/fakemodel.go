// Package fakemodel starts the project's fake model server
// (testdata/fakemodel) for tests, and finds the agent CLIs the backend tests
// drive against it (installed by `make agents` under testdata/agents).
//
// The server is built with `go build` once per test binary and started per
// test on 127.0.0.1:0; it stops when the test ends. A package whose tests
// use it may wrap its TestMain with Main to remove the built binary.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/testutil"
)

// startTimeout bounds the wait for the server's LISTENING line.
const startTimeout = 30 * time.Second

// Server is a running fake model server.
type Server struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// URL is http://Addr, the value for ANTHROPIC_BASE_URL.
	URL string
	// LogPath is the request log: one JSON object per request.
	LogPath string
}

// Request is one line of the request log.
type Request struct {
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Query     string          `json:"query"`
	SessionID string          `json:"session_id"`
	Body      json.RawMessage `json:"body"`
	RawBody   string          `json:"raw_body"`
}

// Message is one entry of a Messages request's messages[].
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Texts returns the message's text: its string content, or the text of its
// text blocks, <system-reminder> sections dropped, empty ones left out.
func (m Message) Texts() []string {
	var out []string
	add := func(s string) {
		for {
			i := strings.Index(s, "<system-reminder>")
			if i < 0 {
				break
			}
			j := strings.Index(s[i:], "</system-reminder>")
			if j < 0 {
				s = s[:i]
				break
			}
			s = s[:i] + s[i+j+len("</system-reminder>"):]
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	var str string
	if json.Unmarshal(m.Content, &str) == nil {
		add(str)
		return out
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &blocks) == nil {
		for _, b := range blocks {
			// Responses input items say input_text / output_text.
			if b.Type == "text" || b.Type == "input_text" || b.Type == "output_text" {
				add(b.Text)
			}
		}
	}
	return out
}

// Messages decodes the messages[] of a Messages or Chat Completions
// request; nil for any other request.
func (r Request) Messages() []Message {
	var body struct {
		Messages []Message `json:"messages"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return nil
	}
	return body.Messages
}

// IsMessages reports whether r is a POST to the Messages endpoint (not
// count_tokens).
func (r Request) IsMessages() bool {
	return r.Method == "POST" && strings.HasSuffix(strings.TrimSuffix(r.Path, "/"), "/v1/messages")
}

// IsChatCompletions reports whether r is a POST to the OpenAI Chat
// Completions endpoint.
func (r Request) IsChatCompletions() bool {
	return r.Method == "POST" && strings.HasSuffix(strings.TrimSuffix(r.Path, "/"), "/chat/completions")
}

// IsResponses reports whether r is a POST to the OpenAI Responses
// endpoint.
func (r Request) IsResponses() bool {
	return r.Method == "POST" && strings.HasSuffix(strings.TrimSuffix(r.Path, "/"), "/v1/responses")
}

// GeminiMethod is the method of a Gemini API call,
// .../models/{model}:{method} ("streamGenerateContent", "generateContent",
// ...); "" for any other request.
func (r Request) GeminiMethod() string {
	i := strings.LastIndex(r.Path, "/models/")
	if r.Method != "POST" || i < 0 {
		return ""
	}
	_, method, _ := strings.Cut(r.Path[i+len("/models/"):], ":")
	return method
}

// Texts is the text of every entry of the request's conversation, in
// order, in whichever API it came: Messages and Chat Completions
// messages[], Responses input (a string or items), Gemini contents[].
// <system-reminder> sections and empty texts are left out.
func (r Request) Texts() []string {
	var body struct {
		Messages []Message       `json:"messages"`
		Input    json.RawMessage `json:"input"`
		Contents []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return nil
	}
	var out []string
	for _, m := range body.Messages {
		out = append(out, m.Texts()...)
	}
	var input string
	if json.Unmarshal(body.Input, &input) == nil {
		out = append(out, Message{Content: body.Input}.Texts()...)
	}
	var items []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(body.Input, &items) == nil {
		for _, it := range items {
			out = append(out, Message{Content: it.Content}.Texts()...)
		}
	}
	for _, c := range body.Contents {
		for _, p := range c.Parts {
			if t := strings.TrimSpace(p.Text); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// builds are the commands built for this test binary, by package path,
// in buildDir.
var (
	// buildMu guards buildDir and builds.
	buildMu  sync.Mutex
	buildDir string
	builds   = map[string]*build{}
)

type build struct {
	once sync.Once
	bin  string
	err  error
}

// Main runs the package's tests and then removes the commands built for
// them (the fake model server, Build's). Use it from TestMain:
// func TestMain(m *testing.M) { fakemodel.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	buildMu.Lock()
	dir := buildDir
	buildMu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// Build builds the command in testdata/<name> (fakemodel, acpagent) once
// per test binary and returns its path; Main removes it.
func Build(t testing.TB, name string) string {
	t.Helper()
	return BuildPackage(t, "./testdata/"+name)
}

// BuildPackage is Build for any command of the module, named by its path
// from the module root ("./cmd/ahpd"); the binary is named after its last
// element.
func BuildPackage(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	buildMu.Unlock()
	b.once.Do(func() { b.bin, b.err = buildCommand(pkg) })
	if b.err != nil {
		t.Fatalf("fakemodel: %v", b.err)
	}
	return b.bin
}

func buildCommand(pkg string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build %s: no go on PATH: %w", pkg, err)
	}
	buildMu.Lock()
	if buildDir == "" {
		buildDir, err = os.MkdirTemp("", "ahpd-testdata-")
	}
	dir := buildDir
	buildMu.Unlock()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command(goTool, "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// binary builds testdata/fakemodel once per test binary.
func binary(t testing.TB) string {
	t.Helper()
	return Build(t, "fakemodel")
}

// Start builds (once) and starts a fake model server on 127.0.0.1:0 with a
// request log in t.TempDir(). It is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binary(t)
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")

	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-log", logPath)
	cmd.WaitDelay = 3 * time.Second
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	first := &firstLine{ch: make(chan string, 1)}
	cmd.Stdout = first
	if err := cmd.Start(); err != nil {
		t.Fatalf("fakemodel: start: %v", err)
	}
	waited := make(chan struct{})
	go func() {
		// Reaps the server; exec copies its output to first and stderr.
		_ = cmd.Wait()
		close(waited)
	}()
	stopServer := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
	}

	var line string
	select {
	case line = <-first.ch:
	case <-waited:
		t.Fatalf("fakemodel: exited before listening; stderr: %s", stderr.String())
	case <-time.After(startTimeout):
		stopServer()
		t.Fatalf("fakemodel: no LISTENING line within %v; stderr: %s", startTimeout, stderr.String())
	}
	addr, ok := strings.CutPrefix(line, "LISTENING ")
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
		stopServer()
		t.Fatalf("fakemodel: unexpected first line %q", line)
	}
	t.Cleanup(func() {
		stopServer()
		if s := stderr.String(); s != "" {
			t.Logf("fakemodel stderr: %s", s)
		}
	})
	return &Server{Addr: addr, URL: "http://" + addr, LogPath: logPath}
}

// Requests reads the request log so far.
func (s *Server) Requests(t testing.TB) []Request {
	t.Helper()
	data, err := os.ReadFile(s.LogPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("fakemodel: read request log: %v", err)
	}
	var out []Request
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Request
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("fakemodel: request log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// ModuleRoot finds the directory holding go.mod, walking up from the
// working directory (a package directory under `go test`).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// FindAgent finds an installed agent CLI: testdata/agents/node_modules/.bin/<name>
// under the module root, else <name> on PATH.
func FindAgent(name string) (string, bool) {
	if root, err := ModuleRoot(); err == nil {
		p := filepath.Join(root, "testdata", "agents", "node_modules", ".bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, true
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	return "", false
}

// Agent returns the path of an installed agent CLI for a test that drives
// it. Such a test runs only in `make check` (testutil.RequireCheck): outside
// it, it skips saying so; in it, a CLI that is not installed skips the test
// with the install hint.
func Agent(t testing.TB, name string) string {
	t.Helper()
	testutil.RequireCheck(t, "drives the "+name+" CLI")
	p, ok := FindAgent(name)
	if !ok {
		t.Skipf("%s CLI not installed; run `make agents`", name)
	}
	return p
}

// firstLine hands the first line written to it to ch and discards the rest.
type firstLine struct {
	ch chan string
	// mu guards buf and sent.
	mu   sync.Mutex
	buf  []byte
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
		f.sent = true
		f.ch <- strings.TrimSpace(string(f.buf[:i]))
		f.buf = nil
	}
	return len(p), nil
}

// lockedBuffer is a bytes.Buffer safe for the process's stderr copier and
// the test reading it.
type lockedBuffer struct {
	// mu guards b.
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
