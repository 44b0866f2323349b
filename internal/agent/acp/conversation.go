package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
	"github.com/ahpd/ahpd/internal/agent/evqueue"
)

// stopGrace is how long a stopped turn waits for the agent to answer
// session/cancel before the backend ends it cancelled itself and replaces
// the process (a turn ends within a second of a stop).
const stopGrace = 700 * time.Millisecond

// prepTimeout bounds each step of a turn's preparation (start,
// initialize, session/new or session/load, the model).
const prepTimeout = 2 * time.Minute

// conversation is one chat's ACP conversation: at most one agent process,
// the session in it, and the turn that runs.
//
// Locks: mu guards the state below; events are decided under it and
// pushed after it is let go, in order (evqueue.Queue.Emit), so nothing
// waits on the chat actor while holding mu (the actor's calls take mu).
// The chat actor's calls never Emit; what they report goes through
// PushOwed.
type conversation struct {
	a      *Agent
	bin    string
	id     string
	dirs   []string
	log    *slog.Logger
	events *evqueue.Queue

	mu   sync.Mutex
	proc *process
	// caps are the agent's capabilities as its process's initialize said.
	caps acpsdk.AgentCapabilities
	// sessionID is the session open in proc ("" until session/new or
	// session/load succeeded in it).
	sessionID string
	// model is the model the session runs; modelOption the id of its
	// configOptions' model select ("": set with session/set_model).
	model       string
	modelOption string
	configOpts  []acpsdk.SessionConfigOption
	mode        string
	modeOption  string
	// wantModel and wantMode are the session's settings (OpenParams):
	// the model a turn that names none runs on, and the mode the session
	// is switched to ("" leaves the agent's own).
	wantModel, wantMode string
	// tools is the host's MCP endpoint for this conversation (nil: none).
	tools   *agent.HostTools
	title   string
	running *turnRun
	held    agentproc.HeldTurns
	perms   map[acpsdk.ToolCallId]*permission
	terms   *terminals
	// replay collects what a session/load replays (nil when none runs).
	replay *replay
	closed bool
}

// turnRun is the turn the agent runs (or prepares).
type turnRun struct {
	id    string
	model string
	// ctx is the turn's preparation context; cancel ends it (a stop
	// before the prompt is sent, or Close).
	ctx    context.Context
	cancel context.CancelFunc
	proc   *process
	// promptSent: session/prompt went out; a stop now is a session/cancel.
	promptSent bool
	stopping   bool
	ended      bool
	// done is closed when the turn ended.
	done     chan struct{}
	tools    map[acpsdk.ToolCallId]*toolState
	usage    agent.Usage
	hasUsage bool
}

type toolState struct {
	name, title string
	input       string
	locations   []acpsdk.ToolCallLocation
	ready, done bool
}

// permission is a session/request_permission waiting for Confirm.
type permission struct {
	turn    *turnRun
	options []acpsdk.PermissionOption
	answer  chan acpsdk.RequestPermissionOutcome
}

func newConversation(a *Agent, bin string, p agent.OpenParams) *conversation {
	log := p.Logger
	if log == nil {
		log = discardLogger
	}
	return &conversation{
		a:      a,
		bin:    bin,
		id:     p.ConversationID,
		dirs:   append([]string(nil), p.Directories...),
		log:    log.With("agent", a.opts.Name, "conversation", p.ConversationID),
		events: evqueue.New(),
		perms:  make(map[acpsdk.ToolCallId]*permission),
		terms:  newTerminals(a.opts.Ledger, agentproc.ToCmd(p.Sandbox)),
		model:  p.Model,

		wantModel: p.Model,
		tools:     p.HostTools,
		wantMode:  p.Config[ModeKey],
	}
}

func newTurnRun(t agent.Turn) *turnRun {
	ctx, cancel := context.WithCancel(context.Background())
	return &turnRun{id: t.ID, model: t.Model, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		tools: make(map[acpsdk.ToolCallId]*toolState)}
}

// Events is the stream of what happened.
func (c *conversation) Events() <-chan agent.Event { return c.events.Events() }

// Send runs the turn, or holds it while another turn runs or ends
// (C-TURN-103, 104).
func (c *conversation) Send(ctx context.Context, t agent.Turn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if runNow, err := c.held.Admit(ctx, t, c.closed, c.running != nil); !runNow {
		return err
	}
	run := newTurnRun(t)
	c.running = run
	go c.loop(run, t)
	return nil
}

// loop runs turns one after another: the one it was started with, then
// each held one. It is the only goroutine that prepares and prompts.
func (c *conversation) loop(run *turnRun, t agent.Turn) {
	for {
		end := c.runTurn(run, t)
		c.finish(run, end)
		c.mu.Lock()
		next, ok := c.held.Next()
		if c.closed || !ok {
			c.running = nil
			c.mu.Unlock()
			return
		}
		t, run = next, newTurnRun(next)
		c.running = run
		c.mu.Unlock()
	}
}

// stopped reports whether the turn was stopped; preparation asks after
// each step (C-TURN-107), so a turn stopped before its prompt goes out
// ends unsent (C-TURN-108).
func (c *conversation) stopped(run *turnRun) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return run.stopping || c.closed
}

var cancelledEnd = agent.End{Outcome: agent.OutcomeCancelled}

// runTurn prepares the agent for the turn, prompts it and says how the
// turn ended.
func (c *conversation) runTurn(run *turnRun, t agent.Turn) agent.End {
	defer run.cancel()
	if c.stopped(run) {
		return cancelledEnd
	}
	p, err := c.ensureProcess(run)
	if err != nil {
		if c.stopped(run) {
			return cancelledEnd
		}
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "agentStartFailed", Message: err.Error()}
	}
	if c.stopped(run) {
		return cancelledEnd
	}
	notice, err := c.ensureSession(run, p)
	if err != nil {
		if c.stopped(run) {
			return cancelledEnd
		}
		return c.faultEnd(p, "agentSessionFailed", "open the session", err)
	}
	if notice != "" {
		c.emit(func() []agent.Event {
			return []agent.Event{{Kind: agent.EventNotice, TurnID: run.id, Text: notice}}
		})
	}
	if c.stopped(run) {
		return cancelledEnd
	}
	if err := c.ensureModel(run, p); err != nil {
		c.log.Warn("acp agent would not take the model", "model", run.model, "err", err)
		if p.dead() {
			return c.faultEnd(p, "agentFault", "set the model", err)
		}
	}
	if err := c.ensureMode(run, p); err != nil {
		c.log.Warn("acp agent would not take the mode", "mode", c.wantMode, "err", err)
		if p.dead() {
			return c.faultEnd(p, "agentFault", "set the mode", err)
		}
	}
	c.mu.Lock()
	if run.stopping || c.closed {
		c.mu.Unlock()
		return cancelledEnd
	}
	run.promptSent = true
	sid := c.sessionID
	caps := c.caps.PromptCapabilities
	c.mu.Unlock()

	// The prompt is not bound by the turn's preparation context: once it
	// is out, a stop is a session/cancel, and a dead process ends it.
	resp, err := p.conn.Prompt(context.Background(), acpsdk.PromptRequest{
		SessionId: acpsdk.SessionId(sid),
		Prompt:    promptBlocks(t, caps),
	})
	if err != nil {
		c.mu.Lock()
		stopping := run.stopping
		c.mu.Unlock()
		if stopping && !p.dead() {
			return cancelledEnd
		}
		return c.faultEnd(p, "agentFault", "run the prompt", err)
	}
	if u := resp.Usage; u != nil {
		c.mu.Lock()
		run.usage.InputTokens = u.InputTokens
		run.usage.OutputTokens = u.OutputTokens
		if u.CachedReadTokens != nil {
			run.usage.CacheRead = *u.CachedReadTokens
		}
		run.hasUsage = true
		c.mu.Unlock()
	}
	switch resp.StopReason {
	case acpsdk.StopReasonEndTurn:
		return agent.End{Outcome: agent.OutcomeComplete}
	case acpsdk.StopReasonCancelled:
		return cancelledEnd
	case acpsdk.StopReasonMaxTokens:
		return agent.End{Outcome: agent.OutcomeError, ErrorType: string(resp.StopReason), Message: "the agent stopped: the model reached its token limit (max_tokens)"}
	case acpsdk.StopReasonMaxTurnRequests:
		return agent.End{Outcome: agent.OutcomeError, ErrorType: string(resp.StopReason), Message: "the agent stopped: the turn reached its limit of model requests (max_turn_requests)"}
	case acpsdk.StopReasonRefusal:
		return agent.End{Outcome: agent.OutcomeError, ErrorType: string(resp.StopReason), Message: "the agent refused to go on (refusal)"}
	default:
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "unknownStopReason", Message: fmt.Sprintf("the agent stopped with %q", resp.StopReason)}
	}
}

// faultEnd describes a failed request. When the process died (it exited,
// or wrote garbage) it is dropped, so the next turn starts a fresh one.
func (c *conversation) faultEnd(p *process, errType, doing string, err error) agent.End {
	if p.dead() {
		c.dropProcess(p)
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "agentFault",
			Message: fmt.Sprintf("%s failed to %s: %v", c.a.opts.Name, doing, p.fault())}
	}
	var re *acpsdk.RequestError
	if errors.As(err, &re) && re.Code == -32000 {
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "authRequired",
			Message: fmt.Sprintf("%s asks to be authenticated first: %v", c.a.opts.Name, err)}
	}
	return agent.End{Outcome: agent.OutcomeError, ErrorType: errType,
		Message: fmt.Sprintf("%s failed to %s: %v", c.a.opts.Name, doing, err)}
}

// finish ends the turn once, with its usage first.
func (c *conversation) finish(run *turnRun, end agent.End) {
	c.emit(func() []agent.Event {
		if run.ended {
			return nil
		}
		run.ended = true
		close(run.done)
		c.dropPermsLocked(run)
		var evs []agent.Event
		if run.hasUsage {
			u := run.usage
			evs = append(evs, agent.Event{Kind: agent.EventUsage, TurnID: run.id, Usage: &u})
		}
		e := end
		return append(evs, agent.Event{Kind: agent.EventTurnEnd, TurnID: run.id, End: &e})
	})
}

// emit decides on events under mu (decide runs with it held) and pushes
// them in that order.
func (c *conversation) emit(decide func() []agent.Event) { c.events.Emit(&c.mu, decide) }

// ensureProcess starts the agent and initializes it when no process runs.
func (c *conversation) ensureProcess(run *turnRun) (*process, error) {
	c.mu.Lock()
	if p := c.proc; p != nil && !p.dead() {
		run.proc = p
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()
	pc := &procClient{c: c, ready: make(chan struct{})}
	p, err := startProcess(c.bin, c.a.opts.Args, c.dirs[0], c.a.environ(), c.log, c.a.opts.Ledger, c.terms.sandbox, pc)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.a.opts.Command, err)
	}
	pc.p = p
	close(pc.ready)
	ctx, cancel := context.WithTimeout(run.ctx, prepTimeout)
	defer cancel()
	resp, err := p.conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientInfo:      &acpsdk.Implementation{Name: "ahpd", Version: "1"},
		ClientCapabilities: acpsdk.ClientCapabilities{
			Fs:       acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: true,
		},
	})
	if err != nil {
		if p.dead() {
			err = p.fault()
		}
		p.Kill()
		return nil, fmt.Errorf("initialize %s: %w", c.a.opts.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		go p.Close()
		return nil, errors.New("conversation closed")
	}
	c.proc, c.caps, c.sessionID = p, resp.AgentCapabilities, ""
	run.proc = p
	if resp.AgentInfo != nil {
		info := resp.AgentInfo.Name + " " + resp.AgentInfo.Version
		c.a.learn(func(l *learned) { l.Info = info })
	}
	return p, nil
}

// dropProcess forgets p (dead, or stopped past its grace) and ends it, so
// the next turn starts a fresh process on the same session.
func (c *conversation) dropProcess(p *process) {
	c.mu.Lock()
	if c.proc == p {
		c.proc, c.sessionID = nil, ""
	}
	c.mu.Unlock()
	p.Kill()
	c.terms.killAll()
}

// ensureSession opens the chat's session in p: session/load (or
// session/resume) of the one it had, else session/new. notice says what
// the chat should know (its history could not be loaded).
func (c *conversation) ensureSession(run *turnRun, p *process) (notice string, err error) {
	c.mu.Lock()
	if c.sessionID != "" && c.proc == p {
		c.mu.Unlock()
		return "", nil
	}
	caps := c.caps
	c.mu.Unlock()
	rec, found, err := c.a.session(c.id)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(run.ctx, prepTimeout)
	defer cancel()
	if found {
		err := c.resumeSession(ctx, p, rec, caps)
		if err == nil {
			return "", nil
		}
		if p.dead() || ctx.Err() != nil {
			return "", err
		}
		c.log.Warn("acp agent could not load the session; starting a new one", "session", rec.SessionID, "err", err)
		notice = fmt.Sprintf("%s could not load this chat's earlier session (%v); it goes on in a new session without that history.", c.a.opts.Name, err)
	}
	resp, err := p.conn.NewSession(ctx, acpsdk.NewSessionRequest{
		Cwd:                   c.dirs[0],
		McpServers:            c.mcpServers(caps),
		AdditionalDirectories: c.additionalDirs(caps),
	})
	if err != nil {
		return "", err
	}
	if err := c.a.remember(c.id, sessionRecord{SessionID: string(resp.SessionId), Cwd: c.dirs[0]}); err != nil {
		return "", err
	}
	c.sessionReady(p, string(resp.SessionId), resp.ConfigOptions, resp.Models, resp.Modes)
	return notice, nil
}

// resumeSession loads (replaying history, which is not shown: the host
// has the turns) or resumes the kept session.
func (c *conversation) resumeSession(ctx context.Context, p *process, rec sessionRecord, caps acpsdk.AgentCapabilities) error {
	sid := acpsdk.SessionId(rec.SessionID)
	switch {
	case caps.LoadSession:
		c.mu.Lock()
		c.replay = newReplay()
		c.mu.Unlock()
		resp, err := p.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{
			SessionId: sid, Cwd: c.dirs[0], McpServers: c.mcpServers(caps),
			AdditionalDirectories: c.additionalDirs(caps),
		})
		c.mu.Lock()
		c.replay = nil
		c.mu.Unlock()
		if err != nil {
			return fmt.Errorf("session/load %s: %w", rec.SessionID, err)
		}
		c.sessionReady(p, rec.SessionID, resp.ConfigOptions, resp.Models, resp.Modes)
		return nil
	case caps.SessionCapabilities.Resume != nil:
		resp, err := p.conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{
			SessionId: sid, Cwd: c.dirs[0], McpServers: c.mcpServers(caps),
			AdditionalDirectories: c.additionalDirs(caps),
		})
		if err != nil {
			return fmt.Errorf("session/resume %s: %w", rec.SessionID, err)
		}
		c.sessionReady(p, rec.SessionID, resp.ConfigOptions, resp.Models, resp.Modes)
		return nil
	}
	return errors.New("the agent offers neither session/load nor session/resume")
}

// additionalDirs are the chat's further directories, when the agent takes
// them.
func (c *conversation) additionalDirs(caps acpsdk.AgentCapabilities) []string {
	if caps.SessionCapabilities.AdditionalDirectories == nil || len(c.dirs) < 2 {
		return nil
	}
	return append([]string(nil), c.dirs[1:]...)
}

// sessionReady keeps what a session said of its models and modes.
func (c *conversation) sessionReady(p *process, sid string, opts []acpsdk.SessionConfigOption,
	models *acpsdk.SessionModelState, modes *acpsdk.SessionModeState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != p {
		return
	}
	c.sessionID = sid
	c.keepConfigLocked(opts)
	if models != nil && c.modelOption == "" {
		c.model = string(models.CurrentModelId)
	}
	if modes != nil {
		c.mode = string(modes.CurrentModeId)
	}
	ms, mds := modelsOf(opts, models), modesOf(opts, modes)
	c.a.learn(func(l *learned) {
		if len(ms) > 0 {
			l.Models = ms
		}
		if len(mds) > 0 {
			l.Modes = mds
		}
	})
}

// keepConfigLocked keeps a session's config options. c.mu must be held.
func (c *conversation) keepConfigLocked(opts []acpsdk.SessionConfigOption) {
	if opts == nil {
		return
	}
	c.configOpts = opts
	for _, o := range opts {
		s := o.Select
		if s == nil || s.Category == nil {
			continue
		}
		switch *s.Category {
		case acpsdk.SessionConfigOptionCategoryModel:
			c.modelOption = string(s.Id)
			c.model = string(s.CurrentValue)
		case acpsdk.SessionConfigOptionCategoryMode:
			c.modeOption = string(s.Id)
			c.mode = string(s.CurrentValue)
		}
	}
}

// ensureModel switches the session to the turn's model when it names
// another one: through the model config option, else session/set_model.
func (c *conversation) ensureModel(run *turnRun, p *process) error {
	c.mu.Lock()
	want, have, opt, sid := run.model, c.model, c.modelOption, c.sessionID
	if want == "" {
		want = c.wantModel // the session's model
	}
	c.mu.Unlock()
	if want == "" || want == have {
		return nil
	}
	ctx, cancel := context.WithTimeout(run.ctx, prepTimeout)
	defer cancel()
	if opt != "" {
		return c.setConfigOption(ctx, p, sid, opt, want)
	}
	if _, err := p.conn.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{
		SessionId: acpsdk.SessionId(sid), ModelId: acpsdk.UnstableModelId(want),
	}); err != nil {
		return err
	}
	c.mu.Lock()
	c.model = want
	c.mu.Unlock()
	return nil
}

// Steer: ACP has no standard way to add to a running prompt.
func (c *conversation) Steer(s agent.Steering) agent.SteerResult { return agent.SteerUnsupported }

// Withdraw: nothing is ever handed, so nothing is kept.
func (c *conversation) Withdraw(id string) bool { return false }

// Confirm answers the permission request of a tool call: the agent's
// allow-once option (else another allow option), or its reject-once
// option (else another reject option; else the request is cancelled).
func (c *conversation) Confirm(turnID, toolCallID string, approved bool) error {
	c.mu.Lock()
	p, ok := c.perms[acpsdk.ToolCallId(toolCallID)]
	if !ok {
		c.mu.Unlock()
		return fmt.Errorf("confirm tool call %s: nothing waits for confirmation", toolCallID)
	}
	if p.turn.id != turnID {
		c.mu.Unlock()
		return fmt.Errorf("confirm tool call %s: it belongs to turn %s, not %s", toolCallID, p.turn.id, turnID)
	}
	delete(c.perms, acpsdk.ToolCallId(toolCallID))
	c.mu.Unlock()
	p.answer <- pickOption(p.options, approved)
	return nil
}

func pickOption(opts []acpsdk.PermissionOption, approved bool) acpsdk.RequestPermissionOutcome {
	prefer := []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways}
	if approved {
		prefer = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindAllowOnce, acpsdk.PermissionOptionKindAllowAlways}
	}
	for _, k := range prefer {
		for _, o := range opts {
			if o.Kind == k {
				return acpsdk.NewRequestPermissionOutcomeSelected(o.OptionId)
			}
		}
	}
	return acpsdk.NewRequestPermissionOutcomeCancelled()
}

// dropPermsLocked answers every permission request of run cancelled.
// c.mu must be held.
func (c *conversation) dropPermsLocked(run *turnRun) int {
	n := 0
	for id, p := range c.perms {
		if run == nil || p.turn == run {
			delete(c.perms, id)
			p.answer <- acpsdk.NewRequestPermissionOutcomeCancelled()
			n++
		}
	}
	return n
}

// Stop ends the held turns cancelled and stops the running one: before its
// prompt goes out its preparation is abandoned; after, every pending
// permission request is answered cancelled and then session/cancel is
// sent. The turn ends cancelled when the agent answers, or after
// stopGrace, when the process is replaced.
func (c *conversation) Stop(ctx context.Context) error {
	c.mu.Lock()
	held := c.held.Drop()
	run := c.running
	var p *process
	sid := c.sessionID
	answered := 0
	if run != nil && !run.ended && !run.stopping {
		run.stopping = true
		if run.promptSent {
			p = run.proc
			answered = p.wire.count() + c.dropPermsLocked(run)
		} else {
			run.cancel()
		}
	}
	c.mu.Unlock()
	for _, t := range held {
		c.events.PushOwed(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeCancelled}})
	}
	if p == nil {
		return nil
	}
	go c.cancelPrompt(run, p, sid, answered)
	return nil
}

// cancelPrompt sends session/cancel once the cancelled permission answers
// are out, and ends the turn itself if the agent does not answer in time.
func (c *conversation) cancelPrompt(run *turnRun, p *process, sid string, answered int) {
	deadline := time.Now().Add(stopGrace)
	p.wire.awaitCancelled(answered, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	if err := p.conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(sid)}); err != nil {
		c.log.Warn("acp session/cancel not sent", "err", err)
	}
	cancel()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-run.done:
		return
	case <-t.C:
	}
	c.log.Warn("acp agent did not answer session/cancel in time; replacing its process")
	c.finish(run, cancelledEnd)
	c.dropProcess(p)
}

// Close ends the process; the agent keeps its session.
func (c *conversation) Close() error { return c.close(false) }

// Kill ends the agent's process at once, for one that stopped answering
// (agent.Killer).
func (c *conversation) Kill() error { return c.close(true) }

func (c *conversation) close(kill bool) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	p := c.proc
	c.proc = nil
	c.dropPermsLocked(nil)
	c.held.Drop()
	if run := c.running; run != nil {
		run.cancel()
	}
	c.mu.Unlock()
	c.events.Abandon()
	c.terms.killAll()
	if p != nil {
		if kill {
			p.Kill()
		}
		p.Close()
	}
	return nil
}

var (
	_ agent.Conversation = (*conversation)(nil)
	_ agent.Killer       = (*conversation)(nil)
)

// setConfigOption sets the session's config option opt to value and keeps
// the options the agent answers with.
func (c *conversation) setConfigOption(ctx context.Context, p *process, sid, opt, value string) error {
	resp, err := p.conn.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: acpsdk.SessionId(sid), ConfigId: acpsdk.SessionConfigId(opt), Value: acpsdk.SessionConfigValueId(value),
	}})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.keepConfigLocked(resp.ConfigOptions)
	c.mu.Unlock()
	return nil
}

// ensureMode switches the session to the mode its settings name (the
// session config's "mode"): through the mode config option, else
// session/set_mode. Nothing named, or the mode it runs, changes nothing.
func (c *conversation) ensureMode(run *turnRun, p *process) error {
	c.mu.Lock()
	want, have, opt, sid := c.wantMode, c.mode, c.modeOption, c.sessionID
	c.mu.Unlock()
	if want == "" || want == have {
		return nil
	}
	ctx, cancel := context.WithTimeout(run.ctx, prepTimeout)
	defer cancel()
	if opt != "" {
		return c.setConfigOption(ctx, p, sid, opt, want)
	}
	if _, err := p.conn.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(sid), ModeId: acpsdk.SessionModeId(want)}); err != nil {
		return err
	}
	c.mu.Lock()
	c.mode = want
	c.mu.Unlock()
	return nil
}

// mcpServers are the MCP servers a session is handed: the host's tools
// (rename_chat, ...) when the agent takes MCP over HTTP, else none.
func (c *conversation) mcpServers(caps acpsdk.AgentCapabilities) []acpsdk.McpServer {
	if c.tools == nil || !caps.McpCapabilities.Http {
		return []acpsdk.McpServer{}
	}
	return []acpsdk.McpServer{{Http: &acpsdk.McpServerHttpInline{
		Type: "http", Name: c.tools.ServerName, Url: c.tools.URL,
		Headers: []acpsdk.HttpHeader{{Name: "Authorization", Value: "Bearer " + c.tools.Token}},
	}}}
}
