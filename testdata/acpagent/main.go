// Command acpagent is the tests' fake ACP agent, built on acp-go-sdk's
// agent side. Its turns are scripted by the prompt's text:
//
//	[exit]        says a word, then exits 3 mid-turn
//	[garbage]     says a word, then writes a line that is not JSON-RPC
//	[read:PATH]   asks the client to fs/read_text_file PATH and says what came back
//	[write:PATH]  asks the client to fs/write_text_file "written by the fake" to PATH and says how it went
//	[term:CWD|CMD] runs sh -c CMD in a client terminal (in CWD, when not empty), waits for it, says its exit code
//	              and output, and releases it
//	[perm]        asks permission and says which option was picked
//	[slow]        says 40 words 100 ms apart, ending cancelled on session/cancel
//	[wait:PATH]   says a word, waits until PATH exists (ending cancelled on session/cancel), says another
//	[maxtokens]   ends with stop reason max_tokens
//	[history]     says whether this process loaded the session and how many turns it replayed
//	[model]       says the session's model and mode
//	[blocks]      logs the prompt's blocks in order ("blocks host text resource link image") and answers as otherwise
//	otherwise     says "fake acp: <text>", a thought first
//
// With -init-delay D, initialize takes D; with -init-gate PATH it then waits until PATH exists. With -state DIR
// it keeps each session's prompts and answers there and replays them on session/load. With -log FILE it appends
// "initialize" as initialize begins, and "start TEXT" and "end TEXT" for each prompt (what the agent was sent, and
// in which order). A prompt that arrives while another runs in the process is refused with
// an error the turn shows, so a client that sends two at once is seen.
//
// Every session offers two models (fake-small, fake-large) as a "model" config option and two modes (ask,
// code) as its modes state.
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
	initGate  string
	log       string
	// mu guards the fields below.
	mu      sync.Mutex
	cancels map[acp.SessionId]context.CancelFunc
	next    int
	running string
	// loaded: sessions this process loaded, and how many turns each replayed.
	loaded map[acp.SessionId]int
	model  map[acp.SessionId]string
	mode   map[acp.SessionId]string
}

type entry struct{ User, Agent string }

var (
	readRE  = regexp.MustCompile(`\[read:([^\]]*)\]`)
	writeRE = regexp.MustCompile(`\[write:([^\]]*)\]`)
	termRE  = regexp.MustCompile(`\[term:([^|\]]*)\|([^\]]*)\]`)
	// editRE: an edit tool call naming PATH in its locations, asked, then
	// the file written (through the client) with CONTENT; several in one
	// message are several calls, in order.
	editRE = regexp.MustCompile(`\[edit:([^|\]]*)\|([^\]]*)\]`)
	waitRE = regexp.MustCompile(`\[wait:([^\]]*)\]`)
)

func main() {
	state := flag.String("state", "", "directory keeping sessions")
	initDelay := flag.Duration("init-delay", 0, "how long initialize takes")
	initGate := flag.String("init-gate", "", "a path initialize then waits for")
	log := flag.String("log", "", "file the prompts are logged to")
	flag.Parse()
	f := &fake{state: *state, initDelay: *initDelay, initGate: *initGate, log: *log, cancels: make(map[acp.SessionId]context.CancelFunc),
		loaded: make(map[acp.SessionId]int), model: make(map[acp.SessionId]string), mode: make(map[acp.SessionId]string)}
	f.conn = acp.NewAgentSideConnection(f, os.Stdout, os.Stdin)
	<-f.conn.Done()
}

func (f *fake) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	f.logLine("initialize")
	time.Sleep(f.initDelay)
	for f.initGate != "" {
		if _, err := os.Stat(f.initGate); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AuthMethods: []acp.AuthMethod{},
		AgentCapabilities: acp.AgentCapabilities{LoadSession: f.state != "", PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true}}}, nil
}

func (f *fake) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (f *fake) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	f.mu.Lock()
	f.next++
	id := acp.SessionId(fmt.Sprintf("fake-%d-%d", os.Getpid(), f.next))
	f.model[id], f.mode[id] = "fake-small", "ask"
	f.mu.Unlock()
	return acp.NewSessionResponse{SessionId: id, ConfigOptions: f.configOptions(id), Modes: f.modes(id)}, nil
}

func (f *fake) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	h := f.history(p.SessionId)
	for _, e := range h {
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateUserMessageText(e.User)})
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(e.Agent)})
	}
	f.mu.Lock()
	f.loaded[p.SessionId] = len(h)
	f.model[p.SessionId], f.mode[p.SessionId] = "fake-small", "ask"
	f.mu.Unlock()
	return acp.LoadSessionResponse{ConfigOptions: f.configOptions(p.SessionId), Modes: f.modes(p.SessionId)}, nil
}

// configOptions is the session's model select.
func (f *fake) configOptions(id acp.SessionId) []acp.SessionConfigOption {
	f.mu.Lock()
	defer f.mu.Unlock()
	cat := acp.SessionConfigOptionCategoryModel
	opts := acp.SessionConfigSelectOptionsUngrouped{
		{Value: "fake-small", Name: "Fake Small"},
		{Value: "fake-large", Name: "Fake Large"},
	}
	return []acp.SessionConfigOption{{Select: &acp.SessionConfigOptionSelect{
		Id: "model", Name: "Model", Category: &cat, CurrentValue: acp.SessionConfigValueId(f.model[id]),
		Options: acp.SessionConfigSelectOptions{Ungrouped: &opts}, Type: "select",
	}}}
}

// modes is the session's modes state.
func (f *fake) modes(id acp.SessionId) *acp.SessionModeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	ask, code := "Ask before acting", "Act without asking"
	return &acp.SessionModeState{CurrentModeId: acp.SessionModeId(f.mode[id]), AvailableModes: []acp.SessionMode{
		{Id: "ask", Name: "Ask", Description: &ask},
		{Id: "code", Name: "Code", Description: &code},
	}}
}

// logLine appends one line to the -log file.
func (f *fake) logLine(s string) {
	if f.log == "" {
		return
	}
	fh, err := os.OpenFile(f.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer fh.Close()
	fmt.Fprintln(fh, strings.ReplaceAll(s, "\n", " "))
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
	f.mu.Lock()
	if f.running != "" {
		busy := f.running
		f.mu.Unlock()
		f.logLine("overlap " + text)
		return acp.PromptResponse{}, acp.NewInvalidRequest(fmt.Sprintf("a prompt (%q) already runs", busy))
	}
	f.running = text
	f.mu.Unlock()
	f.logLine("start " + text)
	if strings.Contains(text, "[blocks]") {
		f.logLine("blocks " + strings.Join(blockKinds(p.Prompt), " "))
	}
	defer func() {
		f.mu.Lock()
		f.running = ""
		f.mu.Unlock()
		f.logLine("end " + text)
	}()
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
	case writeRE.MatchString(text):
		path := writeRE.FindStringSubmatch(text)[1]
		_, err := f.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: path, Content: "written by the fake"})
		answer := "wrote"
		if err != nil {
			answer = "write refused: " + err.Error()
		}
		f.say(ctx, sid, answer)
		return end(answer)
	case termRE.MatchString(text):
		m := termRE.FindStringSubmatch(text)
		answer := f.runTerminal(ctx, sid, m[1], m[2])
		f.say(ctx, sid, answer)
		return end(answer)
	case editRE.MatchString(text):
		// Each [edit:...] is a call of its own (edit-1, edit-2, ...), in order.
		var answers []string
		for i, m := range editRE.FindAllStringSubmatch(text, -1) {
			answers = append(answers, f.editFile(ctx, sid, acp.ToolCallId(fmt.Sprintf("edit-%d", i+1)), m[1], m[2]))
			if ctx.Err() != nil {
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			}
		}
		answer := strings.Join(answers, "; ")
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
	case waitRE.MatchString(text):
		path := waitRE.FindStringSubmatch(text)[1]
		f.say(ctx, sid, "word ")
		for {
			if _, err := os.Stat(path); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			case <-time.After(20 * time.Millisecond):
			}
		}
		f.say(ctx, sid, "word ")
		return end("waited")
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
	case strings.Contains(text, "[history]"):
		f.mu.Lock()
		n, ok := f.loaded[sid]
		f.mu.Unlock()
		answer := "not loaded"
		if ok {
			answer = fmt.Sprintf("loaded %d turns", n)
		}
		f.say(ctx, sid, answer)
		return end(answer)
	case strings.Contains(text, "[model]"):
		f.mu.Lock()
		answer := "model " + f.model[sid] + ", mode " + f.mode[sid]
		f.mu.Unlock()
		f.say(ctx, sid, answer)
		return end(answer)
	}
	_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentThoughtText("thinking")})
	f.say(ctx, sid, "fake acp: ")
	f.say(ctx, sid, text)
	return end("fake acp: " + text)
}

func (f *fake) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	if p.ModeId != "ask" && p.ModeId != "code" {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams(fmt.Sprintf("no mode %q", p.ModeId))
	}
	f.mu.Lock()
	f.mode[p.SessionId] = string(p.ModeId)
	f.mu.Unlock()
	return acp.SetSessionModeResponse{}, nil
}

func (f *fake) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil || v.ConfigId != "model" || (v.Value != "fake-small" && v.Value != "fake-large") {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("no such config option or value")
	}
	f.mu.Lock()
	f.model[v.SessionId] = string(v.Value)
	f.mu.Unlock()
	return acp.SetSessionConfigOptionResponse{ConfigOptions: f.configOptions(v.SessionId)}, nil
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

// blockKinds names a prompt's blocks: host (the host's <host-context> text),
// text, resource, link, image or other.
func blockKinds(bs []acp.ContentBlock) []string {
	var out []string
	for _, b := range bs {
		switch {
		case b.Text != nil && strings.HasPrefix(b.Text.Text, "<host-context>"):
			out = append(out, "host")
		case b.Text != nil:
			out = append(out, "text")
		case b.Resource != nil:
			out = append(out, "resource")
		case b.ResourceLink != nil:
			out = append(out, "link")
		case b.Image != nil:
			out = append(out, "image")
		default:
			out = append(out, "other")
		}
	}
	return out
}

// runTerminal runs sh -c cmd in a client terminal and describes the result.
func (f *fake) runTerminal(ctx context.Context, sid acp.SessionId, cwd, cmd string) string {
	req := acp.CreateTerminalRequest{SessionId: sid, Command: "sh", Args: []string{"-c", cmd}}
	if cwd != "" {
		req.Cwd = &cwd
	}
	t, err := f.conn.CreateTerminal(ctx, req)
	if err != nil {
		return "term refused: " + err.Error()
	}
	defer func() {
		_, _ = f.conn.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{SessionId: sid, TerminalId: t.TerminalId})
	}()
	w, err := f.conn.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{SessionId: sid, TerminalId: t.TerminalId})
	if err != nil {
		return "term wait failed: " + err.Error()
	}
	out, err := f.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: t.TerminalId})
	if err != nil {
		return "term output failed: " + err.Error()
	}
	code := -1
	if w.ExitCode != nil {
		code = *w.ExitCode
	}
	return fmt.Sprintf("term exit %d: %s", code, strings.TrimSpace(out.Output))
}

// editFile is an edit tool call on path, as agents that edit report it:
// kind edit, the file in its locations, permission asked first; allowed,
// the file is written through the client.
func (f *fake) editFile(ctx context.Context, sid acp.SessionId, id acp.ToolCallId, path, content string) string {
	locs := []acp.ToolCallLocation{{Path: path}}
	kind, title := acp.ToolKindEdit, "Edit "+path
	_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.StartToolCall(id, title,
		acp.WithStartKind(kind), acp.WithStartStatus(acp.ToolCallStatusPending),
		acp.WithStartLocations(locs), acp.WithStartRawInput(map[string]any{"path": path}))})
	// The request names the call in full, as agents that edit send it: the
	// client may take it before the notification above.
	r, err := f.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: sid,
		ToolCall: acp.ToolCallUpdate{ToolCallId: id, Kind: &kind, Title: &title, Locations: locs},
		Options: []acp.PermissionOption{
			{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "allow"},
			{Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "reject"},
		}})
	if err != nil || r.Outcome.Selected == nil || r.Outcome.Selected.OptionId != "allow" {
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed))})
		return "edit not allowed"
	}
	_, err = f.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: path, Content: content})
	st, answer := acp.ToolCallStatusCompleted, "edited"
	if err != nil {
		st, answer = acp.ToolCallStatusFailed, "edit refused: "+err.Error()
	}
	_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateToolCall(id, acp.WithUpdateStatus(st))})
	return answer
}
