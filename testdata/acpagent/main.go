// Command acpagent is the tests' fake ACP agent, built on acp-go-sdk's
// agent side. Its turns are scripted by the prompt's text:
//
//	[exit]        says a word, then exits 3 mid-turn
//	[garbage]     says a word, then writes a line that is not JSON-RPC
//	[read:PATH]   asks the client to fs/read_text_file PATH and says what came back
//	[perm]        asks permission and says which option was picked
//	[slow]        says 40 words 100 ms apart, ending cancelled on session/cancel
//	[maxtokens]   ends with stop reason max_tokens
//	otherwise     says "fake acp: <text>", a thought first
//
// With -init-delay D, initialize takes D. With -state DIR it keeps each session's prompts and answers there and
// replays them on session/load.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

type fake struct {
	conn      *acp.AgentSideConnection
	state     string
	initDelay time.Duration
	// mu guards cancels and next.
	mu      sync.Mutex
	cancels map[acp.SessionId]context.CancelFunc
	next    int
}

type entry struct{ User, Agent string }

var readRE = regexp.MustCompile(`\[read:([^\]]*)\]`)

func main() {
	state := flag.String("state", "", "directory keeping sessions")
	initDelay := flag.Duration("init-delay", 0, "how long initialize takes")
	flag.Parse()
	f := &fake{state: *state, initDelay: *initDelay, cancels: make(map[acp.SessionId]context.CancelFunc)}
	f.conn = acp.NewAgentSideConnection(f, os.Stdout, os.Stdin)
	<-f.conn.Done()
}

func (f *fake) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	time.Sleep(f.initDelay)
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AuthMethods: []acp.AuthMethod{},
		AgentCapabilities: acp.AgentCapabilities{LoadSession: f.state != "", PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true}}}, nil
}

func (f *fake) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (f *fake) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	f.mu.Lock()
	f.next++
	id := fmt.Sprintf("fake-%d-%d", os.Getpid(), f.next)
	f.mu.Unlock()
	return acp.NewSessionResponse{SessionId: acp.SessionId(id)}, nil
}

func (f *fake) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	for _, e := range f.history(p.SessionId) {
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateUserMessageText(e.User)})
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(e.Agent)})
	}
	return acp.LoadSessionResponse{}, nil
}

func (f *fake) history(id acp.SessionId) []entry {
	var out []entry
	if f.state == "" {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(f.state, string(id)+".json"))
	_ = json.Unmarshal(b, &out)
	return out
}

func (f *fake) keep(id acp.SessionId, e entry) {
	if f.state == "" {
		return
	}
	h := append(f.history(id), e)
	b, _ := json.Marshal(h)
	_ = os.WriteFile(filepath.Join(f.state, string(id)+".json"), b, 0o644)
}

func (f *fake) Cancel(ctx context.Context, p acp.CancelNotification) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cancels[p.SessionId]; c != nil {
		c()
	}
	return nil
}

func (f *fake) say(ctx context.Context, sid acp.SessionId, s string) {
	_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(s)})
}

func (f *fake) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	f.cancels[p.SessionId] = cancel
	f.mu.Unlock()
	defer cancel()
	var text string
	for _, b := range p.Prompt {
		if b.Text != nil && !strings.HasPrefix(b.Text.Text, "<host-context>") {
			text += b.Text.Text
		}
	}
	sid := p.SessionId
	end := func(answer string) (acp.PromptResponse, error) {
		f.keep(sid, entry{User: text, Agent: answer})
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}
	switch {
	case strings.Contains(text, "[exit]"):
		f.say(ctx, sid, "bye")
		time.Sleep(50 * time.Millisecond)
		os.Exit(3)
	case strings.Contains(text, "[garbage]"):
		f.say(ctx, sid, "noise")
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintln(os.Stdout, "this is not json")
		<-ctx.Done()
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case readRE.MatchString(text):
		path := readRE.FindStringSubmatch(text)[1]
		r, err := f.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: path})
		answer := "read: " + r.Content
		if err != nil {
			answer = "read refused: " + err.Error()
		}
		f.say(ctx, sid, answer)
		return end(answer)
	case strings.Contains(text, "[perm]"):
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.StartToolCall("call-1", "Run a thing",
			acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusPending))})
		r, err := f.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: sid,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "call-1"},
			Options: []acp.PermissionOption{
				{Kind: acp.PermissionOptionKindAllowAlways, Name: "Always", OptionId: "always"},
				{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "allow"},
				{Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "reject"},
			}})
		picked := "cancelled"
		if err == nil && r.Outcome.Selected != nil {
			picked = string(r.Outcome.Selected.OptionId)
		}
		st := acp.ToolCallStatusCompleted
		if picked != "allow" && picked != "always" {
			st = acp.ToolCallStatusFailed
		}
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateToolCall("call-1", acp.WithUpdateStatus(st))})
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		f.say(ctx, sid, "picked "+picked)
		return end("picked " + picked)
	case strings.Contains(text, "[slow]"):
		for i := 0; i < 40; i++ {
			select {
			case <-ctx.Done():
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			case <-time.After(100 * time.Millisecond):
			}
			f.say(ctx, sid, "word ")
		}
		return end("slow")
	case strings.Contains(text, "[maxtokens]"):
		return acp.PromptResponse{StopReason: acp.StopReasonMaxTokens}, nil
	}
	_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentThoughtText("thinking")})
	f.say(ctx, sid, "fake acp: ")
	f.say(ctx, sid, text)
	return end("fake acp: " + text)
}

func (f *fake) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

func (f *fake) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (f *fake) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (f *fake) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (f *fake) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}
