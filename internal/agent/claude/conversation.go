package claude

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent"
)

// A stop is watched twice. The CLI answers an interrupt's control request
// at once even when the turn takes a while to wind down: one that has not
// answered within stopAckWait is hung (stopped, wedged), and is killed and
// replaced so the next turn starts within seconds. One that answered gets
// stopWatchdog for the turn's result before the same happens.
const (
	stopAckWait  = 2 * time.Second
	stopWatchdog = 20 * time.Second
)

// baseArgs are the flags every CLI process gets: prompts and answers as
// stream-json, partial messages for live deltas, user frames echoed as the
// CLI takes them in (how the backend learns a steering message was
// consumed), permission asks sent to us as control requests.
var baseArgs = []string{
	"-p",
	"--input-format", "stream-json",
	"--output-format", "stream-json",
	"--verbose",
	"--include-partial-messages",
	"--replay-user-messages",
	"--permission-prompt-tool", "stdio",
}

// launch says how to start a process for the conversation.
type launch struct {
	mode   agent.OpenMode
	source string
	point  string
}

func firstLaunch(p agent.OpenParams) launch {
	return launch{mode: p.Mode, source: p.Source, point: p.Point}
}

// conversation is one open Claude conversation: a CLI process and the
// bookkeeping that maps what it prints to the host's turns.
//
// Turn bookkeeping. Every user frame written to the CLI (a turn's prompt or
// a steering message) is a frame, kept in write order until the CLI has
// answered it. The CLI answers frames in that order: it starts a run at
// the oldest unanswered one and takes later ones into that run at a tool
// call (their replay shows up before the run's result) or runs them after
// it as runs of their own. So:
//  1. output belongs to the host turn of the oldest unanswered frame;
//  2. a result answers the oldest frame and every frame replayed so far;
//  3. a host turn ends at the result that leaves it no unanswered frame
//     (C-TURN-63), or at once when a result fails (C-TURN-67) or it was
//     stopped.
//
// A turn sent while frames are unanswered is held and written once none
// are (C-TURN-78), so the frames of one host turn are always its prompt
// followed by its steering messages.
type conversation struct {
	// onCommands receives the slash commands the CLI answers initialize
	// with (set by Open before start; read on the stdout goroutine).
	onCommands func([]agent.Command)

	opts   Options
	bin    string
	params agent.OpenParams
	id     string
	cwd    string
	log    *slog.Logger
	events *eventQueue

	// mu guards every field below. The reader goroutine of the current
	// process handles each stdout line under it; the chat actor's calls
	// take it briefly. Nothing blocks while it is held: stdin lines go to
	// the process's writer queue and events to the event queue.
	mu sync.Mutex
	// proc is the running CLI; nil before a restart (StopEndsQuery) or
	// after Close.
	proc *process
	// retiring is a process being shut down by the backend; a restart
	// waits for it so two CLIs never write one transcript.
	retiring *process
	frames   []*frame
	held     []agent.Turn
	// steered holds the steering messages written, by id.
	steered map[string]*frame
	// perms are the can_use_tool requests waiting for Confirm, by tool call.
	perms map[string]*permission
	// stream is the API message being streamed.
	stream streamState
	// streamed holds the ids of messages whose content came as deltas.
	streamed map[string]bool
	// model is what the CLI says it runs; wantModel the last model asked for.
	model     string
	wantModel string
	// requests are our control requests in flight, id → subtype.
	requests map[string]string
	nextReq  int
	// stopEndsProcess: the stop in progress ends the process (StopEndsQuery).
	stopEndsProcess bool
	stopGen         int
	// stopReq is the request id of the stop's interrupt; stopAcked says
	// the CLI answered it.
	stopReq   string
	stopAcked bool
	// stopAckWait and stopWait are how long a stop waits for the CLI to
	// answer its interrupt and for the turn's result (stopAckWait,
	// stopWatchdog).
	stopAckWait time.Duration
	stopWait    time.Duration
	closed      bool
	exited      bool
}

// frame is one user frame written to the CLI.
type frame struct {
	uuid string
	// turn is the host turn the answer belongs to; nil: the answer goes
	// nowhere (the steering message of a failed turn, C-TURN-67).
	turn *hostTurn
	// steeringID is set for a steering message.
	steeringID string
	// prompt: the frame is its turn's prompt (a synthetic turn's steering
	// message included).
	prompt   bool
	replayed bool
}

// hostTurn is a host turn at the CLI.
type hostTurn struct {
	id string
	// open counts its frames the CLI has not answered.
	open     int
	stopping bool
	ended    bool
	// point is the uuid of its last chain entry so far.
	point string
	tools map[string]*toolState
	usage agent.Usage
	// failure is the text of a synthetic API error message.
	failure string
}

type toolState struct {
	name  string
	ready bool
	done  bool
	input json.RawMessage
	// worker is the worker whose conversation made the call ("" for the
	// chat's own); spawn: the call spawned a worker (workers.go).
	worker string
	spawn  bool
}

type permission struct {
	requestID string
	turn      *hostTurn
	input     json.RawMessage
}

type streamState struct {
	msgID  string
	model  string
	in     int
	cache  int
	blocks map[int]*blockState
}

type blockState struct {
	kind   string
	partID string
	toolID string
	input  strings.Builder
}

func newConversation(opts Options, bin string, p agent.OpenParams) *conversation {
	log := p.Logger
	if log == nil {
		log = discardLogger
	}
	cwd := ""
	if len(p.Directories) > 0 {
		cwd = p.Directories[0]
	}
	return &conversation{
		opts:        opts,
		bin:         bin,
		params:      p,
		id:          p.ConversationID,
		cwd:         cwd,
		log:         log.With("agent", Provider, "conversation", p.ConversationID),
		events:      newEventQueue(),
		steered:     make(map[string]*frame),
		perms:       make(map[string]*permission),
		streamed:    make(map[string]bool),
		requests:    make(map[string]string),
		wantModel:   p.Model,
		stopWait:    stopWatchdog,
		stopAckWait: stopAckWait,
	}
}

// start starts the first process.
func (c *conversation) start(l launch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startLocked(l)
}

// startLocked starts a process. c.mu must be held.
func (c *conversation) startLocked(l launch) error {
	args := append([]string(nil), baseArgs...)
	switch l.mode {
	case agent.OpenNew:
		args = append(args, "--session-id", c.id)
	case agent.OpenResume:
		if fileExists(transcriptPath(c.opts.configDir(), c.id, c.cwd)) {
			args = append(args, "--resume", c.id)
		} else {
			// Nothing was kept (no prompt ever reached the CLI): start the
			// conversation under its id instead of failing the resume.
			args = append(args, "--session-id", c.id)
		}
	case agent.OpenFork:
		// The CLI takes both: the copy is written under our id.
		args = append(args, "--resume", l.source, "--fork-session", "--session-id", c.id)
		if l.point != "" {
			args = append(args, "--resume-session-at", l.point)
		}
	case agent.OpenRewind:
		args = append(args, "--resume", c.id, "--resume-session-at", l.point)
	default:
		return fmt.Errorf("open mode %v", l.mode)
	}
	if c.wantModel != "" && c.wantModel != "default" {
		args = append(args, "--model", c.wantModel)
	}
	if mode := c.params.Config[PermissionModeKey]; mode != "" && mode != "default" {
		args = append(args, "--permission-mode", mode)
	}
	args = append(args, hostToolArgs(c.params.HostTools)...)
	args = append(args, c.opts.ExtraArgs...)
	p, err := c.startProcess(args)
	if err != nil {
		return err
	}
	c.proc = p
	c.streamed = make(map[string]bool)
	// The SDK's initialize, asking the CLI to forward its subagents' own
	// messages (parent_tool_use_id set) as the SDK's forwardSubagentText
	// does; without it only a subagent's prompt is printed (workers.go).
	c.control(map[string]any{"subtype": "initialize", "forwardSubagentText": true})
	return nil
}

// Events is the stream of what happened.
func (c *conversation) Events() <-chan agent.Event { return c.events.out }

func (c *conversation) emit(ev agent.Event) { c.events.push(ev) }

// Send writes the turn's prompt, or holds it while the CLI owes answers to
// frames written before (C-TURN-78).
func (c *conversation) Send(ctx context.Context, t agent.Turn) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send turn %s: %w", t.ID, err)
	}
	if t.ID == "" {
		return errors.New("send turn: empty turn id")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("send turn %s: conversation closed", t.ID)
	}
	if c.exited {
		return fmt.Errorf("send turn %s: claude has exited", t.ID)
	}
	if len(c.frames) > 0 || len(c.held) > 0 || (c.proc == nil && c.retiring != nil) {
		c.held = append(c.held, t)
		return nil
	}
	return c.writeTurn(t)
}

// writeTurn writes a turn's prompt, starting a process that resumes the
// conversation when there is none. c.mu must be held.
func (c *conversation) writeTurn(t agent.Turn) error {
	if c.proc == nil {
		if err := c.startLocked(launch{mode: agent.OpenResume}); err != nil {
			return fmt.Errorf("send turn %s: %w", t.ID, err)
		}
	}
	if t.Model != "" && t.Model != c.wantModel {
		c.wantModel = t.Model
		c.control(map[string]any{"subtype": "set_model", "model": t.Model})
	}
	ht := &hostTurn{id: t.ID, open: 1, tools: make(map[string]*toolState)}
	f := &frame{uuid: uuid.NewString(), turn: ht, prompt: true}
	c.frames = append(c.frames, f)
	c.writeFrame(f, promptContent(t))
	return nil
}

// writeFrame writes a user frame. c.mu must be held.
func (c *conversation) writeFrame(f *frame, content any) {
	c.writeJSON(userFrame{
		Type:    "user",
		Message: userMessage{Role: "user", Content: content},
		UUID:    f.uuid,
	})
}

// writeJSON queues one stdin line. c.mu must be held.
func (c *conversation) writeJSON(v any) {
	if c.proc == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		c.log.Error("claude frame not encodable", "err", err)
		return
	}
	c.writeLine(c.proc, b)
}

// control sends a control request and returns its id. c.mu must be held.
func (c *conversation) control(req map[string]any) string {
	c.nextReq++
	id := "ahpd-" + strconv.Itoa(c.nextReq)
	sub, _ := req["subtype"].(string)
	c.requests[id] = sub
	c.writeJSON(controlRequestFrame{Type: "control_request", RequestID: id, Request: req})
	return id
}

// promptContent is what a turn's frame says: the host's context and the
// attachments ahead of the text (C-TURN-109..111), as blocks the
// transcript read-back can tell apart.
func promptContent(t agent.Turn) any {
	var blocks []map[string]any
	text := func(s string) { blocks = append(blocks, map[string]any{"type": "text", "text": s}) }
	if t.HostContext != "" {
		text("<host-context>\n" + t.HostContext + "\n</host-context>")
	}
	for _, a := range t.Attachments {
		switch a.As {
		case "image":
			blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{
				"type": "base64", "media_type": a.MimeType, "data": base64.StdEncoding.EncodeToString(a.Data),
			}})
		case "inline":
			text(fmt.Sprintf("<attachment label=%q path=%q>\n%s\n</attachment>", a.Label, a.Path, a.Text))
		default:
			text(fmt.Sprintf("<attachment label=%q path=%q />", a.Label, a.Path))
		}
	}
	if len(blocks) == 0 {
		return t.Text
	}
	if t.Text != "" {
		text(t.Text)
	}
	return blocks
}

// Steer writes a steering message into the running turn once its prompt is
// out (C-TURN-65); until then, and for a turn that is not running or is
// stopping, it answers SteerNotYet (C-TURN-66).
func (c *conversation) Steer(s agent.Steering) agent.SteerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.steered[s.ID]; ok {
		if f.turn != nil && f.turn.id == s.TurnID {
			return agent.SteerTaken
		}
		return agent.SteerRefused
	}
	if c.closed || c.exited || c.proc == nil {
		return agent.SteerNotYet
	}
	var t *hostTurn
	for _, f := range c.frames {
		if f.turn != nil && f.turn.id == s.TurnID {
			t = f.turn
			break
		}
	}
	if t == nil || t.ended || t.stopping {
		return agent.SteerNotYet
	}
	f := &frame{uuid: uuid.NewString(), turn: t, steeringID: s.ID}
	t.open++
	c.frames = append(c.frames, f)
	c.steered[s.ID] = f
	c.writeFrame(f, s.Text)
	return agent.SteerTaken
}

// denyMessage is what the CLI is told when the user refuses a tool call;
// it comes back as the call's result, which is how a transcript read back
// knows the call was denied.
const denyMessage = "The user denied this tool call."

// Withdraw: the CLI cannot give a steering message back.
func (c *conversation) Withdraw(id string) bool { return false }

// Confirm answers a can_use_tool request: allow with the call's input, or
// deny.
func (c *conversation) Confirm(turnID, toolCallID string, approved bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.perms[toolCallID]
	if !ok {
		return fmt.Errorf("confirm tool call %s: nothing waits for confirmation", toolCallID)
	}
	if p.turn.id != turnID {
		return fmt.Errorf("confirm tool call %s: it belongs to turn %s, not %s", toolCallID, p.turn.id, turnID)
	}
	delete(c.perms, toolCallID)
	if approved {
		c.answerPermission(p, permissionAllow{Behavior: "allow", UpdatedInput: p.input})
	} else {
		c.answerPermission(p, permissionDeny{Behavior: "deny", Message: denyMessage})
	}
	return nil
}

func (c *conversation) answerPermission(p *permission, answer any) {
	c.writeJSON(controlResponseFrame{Type: "control_response", Response: controlResponse{
		Subtype: "success", RequestID: p.requestID, Response: answer,
	}})
}

// denyAll denies every pending permission ask. c.mu must be held.
func (c *conversation) denyAll(message string, interrupt bool) {
	for id, p := range c.perms {
		c.answerPermission(p, permissionDeny{Behavior: "deny", Message: message, Interrupt: interrupt})
		delete(c.perms, id)
	}
}

// Stop ends the held turns cancelled, denies every pending permission ask
// and interrupts the running turn (C-TURN-69); the turn ends cancelled when
// the CLI's result comes. With StopEndsQuery the process is ended then and
// the next Send resumes the conversation in a new one (C-TURN-76, C-TURN-77).
func (c *conversation) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.held {
		c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeCancelled}})
	}
	c.held = nil
	var live []*hostTurn
	for _, f := range c.frames {
		if t := f.turn; t != nil && !t.ended && !t.stopping {
			t.stopping = true
			live = append(live, t)
		}
	}
	if len(live) == 0 {
		return nil
	}
	c.denyAll("The user stopped the turn.", true)
	c.stopReq = c.control(map[string]any{"subtype": "interrupt"})
	c.stopAcked = false
	c.stopEndsProcess = c.opts.StopEnds == StopEndsQuery
	c.stopGen++
	gen := c.stopGen
	time.AfterFunc(c.stopAckWait, func() { c.stopOverdue(gen, false) })
	return nil
}

// stopOverdue runs when a stopped turn has not ended in time: stopAckWait
// after the stop (final false) and, when the CLI answered the interrupt,
// stopWait after that (final true). An overdue stop ends the turns
// cancelled, gives their steering back to the host, and kills the process;
// the held turns start in a new one.
func (c *conversation) stopOverdue(gen int, final bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.stopGen || c.closed || c.exited {
		return
	}
	if !final && c.stopAcked {
		time.AfterFunc(c.stopWait, func() { c.stopOverdue(gen, true) })
		return
	}
	stuck := false
	for _, f := range c.frames {
		if f.turn != nil && f.turn.stopping && !f.turn.ended {
			stuck = true
		}
	}
	if !stuck {
		return
	}
	if c.stopAcked {
		c.log.Warn("claude did not end the stopped turn; killing and replacing the process", "waited", c.stopAckWait+c.stopWait)
	} else {
		c.log.Warn("claude did not answer the interrupt; killing and replacing the process", "waited", c.stopAckWait)
	}
	for _, f := range c.frames {
		t := f.turn
		if t == nil || t.ended {
			continue
		}
		if !f.prompt && f.steeringID != "" {
			c.emit(agent.Event{Kind: agent.EventSteeringReturned, TurnID: t.id, SteeringID: f.steeringID})
			continue
		}
		c.endTurn(t, agent.End{Outcome: agent.OutcomeCancelled})
	}
	c.frames = nil
	c.stopEndsProcess = false
	c.retire(true)
	c.dispatch()
}

// retire ends the current process in the background: politely (stdin
// closed, then signals), or at once with kill for one that stopped
// answering. c.mu must be held.
func (c *conversation) retire(kill bool) {
	p := c.proc
	if p == nil {
		return
	}
	c.proc = nil
	c.denyAll("The conversation's process ended.", true)
	c.retiring = p
	go func() {
		// Owned by retire: shuts p down, then lets held turns start a new
		// process.
		if kill {
			p.Kill()
		} else {
			p.Close()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.retiring == p {
			c.retiring = nil
		}
		c.dispatch()
	}()
}

// dispatch writes the first held turn once nothing is owed. c.mu must be
// held.
func (c *conversation) dispatch() {
	if c.closed || c.exited || len(c.frames) > 0 || len(c.held) == 0 {
		return
	}
	if c.proc == nil && c.retiring != nil {
		return // retire's goroutine dispatches once the old process is gone
	}
	t := c.held[0]
	c.held = c.held[1:]
	if err := c.writeTurn(t); err != nil {
		c.log.Error("claude held turn not sent", "turn", t.ID, "err", err)
		c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{
			Outcome: agent.OutcomeError, ErrorType: "start_failed", Message: err.Error(),
		}})
		c.dispatch()
	}
}

// Close ends the process; the CLI's transcript stays.
func (c *conversation) Close() error { return c.close(false) }

// Kill ends the process at once, for one that stopped answering
// (agent.Killer); the CLI's transcript stays.
func (c *conversation) Kill() error { return c.close(true) }

func (c *conversation) close(kill bool) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	p, r := c.proc, c.retiring
	c.proc = nil
	if p != nil {
		c.denyAll("The conversation was closed.", true)
		for _, f := range c.frames {
			if f.turn != nil && !f.turn.ended {
				// Interrupt what runs so stdin EOF ends the CLI promptly.
				c.nextReq++
				b, _ := json.Marshal(controlRequestFrame{Type: "control_request",
					RequestID: "ahpd-" + strconv.Itoa(c.nextReq), Request: map[string]any{"subtype": "interrupt"}})
				c.writeLine(p, b)
				break
			}
		}
	}
	c.mu.Unlock()
	for _, proc := range []*process{p, r} {
		switch {
		case proc == nil:
		case kill:
			proc.Kill()
		default:
			proc.Close()
		}
	}
	c.events.abandon()
	return nil
}

// processExited is called by a process's reader once it has been reaped.
func (c *conversation) processExited(p *process) {
	c.mu.Lock()
	if p != c.proc || c.closed {
		c.mu.Unlock()
		return
	}
	c.proc = nil
	c.exited = true
	err := p.ExitError()
	c.log.Warn("claude exited", "err", err)
	c.emit(agent.Event{Kind: agent.EventExited, Err: err})
	c.mu.Unlock()
	c.events.finish()
}

// current is the host turn the CLI's output belongs to, or nil.
// c.mu must be held.
func (c *conversation) current() *hostTurn {
	if len(c.frames) == 0 {
		return nil
	}
	t := c.frames[0].turn
	if t == nil || t.ended {
		return nil
	}
	return t
}

// handleLine handles one stdout line; it runs on p's reader goroutine.
func (c *conversation) handleLine(p *process, line []byte) {
	var l outLine
	if err := json.Unmarshal(line, &l); err != nil {
		c.log.Warn("claude printed a line that is not JSON", "line", string(line))
		return
	}
	// Back-pressure: the next line is read once the chat actor has taken
	// enough of what this one said (runs after the unlock below).
	defer c.events.waitRoom()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p != c.proc {
		return // a retired process
	}
	if l.ParentToolUseID != nil && *l.ParentToolUseID != "" && l.Type != "control_request" {
		c.handleWorkerLine(&l, *l.ParentToolUseID) // workers.go
		return
	}
	switch l.Type {
	case "system":
		c.handleSystem(&l)
	case "stream_event":
		if t := c.current(); t != nil && l.Event != nil {
			c.handleStreamEvent(t, l.Event)
		}
	case "assistant":
		if t := c.current(); t != nil && l.Message != nil {
			c.handleAssistant(t, &l)
		}
	case "user":
		c.handleUser(&l)
	case "result":
		c.handleResult(&l)
	case "control_request":
		c.handleControlRequest(&l)
	case "control_response":
		c.handleControlResponse(&l)
	}
}

func (c *conversation) handleSystem(l *outLine) {
	switch l.Subtype {
	case "init":
		c.model = l.Model
		if l.SessionID != "" && l.SessionID != c.id {
			c.log.Warn("claude runs another session than asked", "session", l.SessionID)
		}
	case "compact_boundary":
		if t := c.current(); t != nil && l.CompactMetadata != nil {
			c.emit(agent.Event{Kind: agent.EventNotice, TurnID: t.id, Text: l.CompactMetadata.notice()})
		}
	case "api_retry":
		c.log.Info("claude retries the API", "attempt", l.Attempt, "max", l.MaxRetries, "status", l.ErrorStatus)
	}
}

func (c *conversation) handleStreamEvent(t *hostTurn, ev *streamEvent) {
	switch ev.Type {
	case "message_start":
		c.stream = streamState{blocks: make(map[int]*blockState)}
		if m := ev.Message; m != nil {
			c.stream.msgID, c.stream.model = m.ID, m.Model
			c.streamed[m.ID] = true
			if u := m.Usage; u != nil {
				c.stream.in, c.stream.cache = u.InputTokens, u.CacheReadInputTokens
			}
		}
	case "content_block_start":
		cb := ev.ContentBlock
		if cb == nil || c.stream.blocks == nil {
			return
		}
		b := &blockState{kind: cb.Type}
		switch cb.Type {
		case "text", "thinking":
			b.partID = uuid.NewString()
		case "tool_use":
			b.toolID = cb.ID
			c.startTool(t, cb.ID, cb.Name, "")
		}
		c.stream.blocks[ev.Index] = b
	case "content_block_delta":
		b := c.stream.blocks[ev.Index]
		if b == nil || ev.Delta == nil {
			return
		}
		switch ev.Delta.Type {
		case "text_delta":
			c.emit(agent.Event{Kind: agent.EventText, TurnID: t.id, PartID: b.partID, Text: ev.Delta.Text})
		case "thinking_delta":
			c.emit(agent.Event{Kind: agent.EventReasoning, TurnID: t.id, PartID: b.partID, Text: ev.Delta.Thinking})
		case "input_json_delta":
			b.input.WriteString(ev.Delta.PartialJSON)
			c.emit(agent.Event{Kind: agent.EventToolInput, TurnID: t.id, Text: ev.Delta.PartialJSON,
				ToolCall: &agent.ToolCall{ID: b.toolID}})
		}
	case "content_block_stop":
		b := c.stream.blocks[ev.Index]
		if b == nil || b.kind != "tool_use" {
			return
		}
		if ts := t.tools[b.toolID]; ts != nil && !ts.ready {
			input := json.RawMessage(b.input.String())
			if !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			c.readyTool(t, b.toolID, input)
		}
	case "message_delta":
		if ev.Usage == nil {
			return
		}
		t.usage.InputTokens += c.stream.in
		t.usage.CacheRead += c.stream.cache
		t.usage.OutputTokens += ev.Usage.OutputTokens
		if c.stream.model != "" {
			t.usage.Model = c.stream.model
		}
		c.stream.in, c.stream.cache = 0, 0
		u := t.usage
		c.emit(agent.Event{Kind: agent.EventUsage, TurnID: t.id, Usage: &u})
	}
}

// startTool reports a tool call's start once; worker names the worker
// whose conversation made it ("" for the chat's own).
func (c *conversation) startTool(t *hostTurn, id, name, worker string) *toolState {
	if ts := t.tools[id]; ts != nil {
		return ts
	}
	ts := &toolState{name: name, worker: worker}
	t.tools[id] = ts
	c.emit(agent.Event{Kind: agent.EventToolStart, TurnID: t.id, Worker: worker,
		ToolCall: &agent.ToolCall{ID: id, Name: name, DisplayName: name}})
	return ts
}

// readyTool reports a tool call's complete input once.
func (c *conversation) readyTool(t *hostTurn, id string, input json.RawMessage) {
	ts := t.tools[id]
	if ts == nil || ts.ready {
		return
	}
	ts.ready, ts.input = true, input
	c.emit(agent.Event{Kind: agent.EventToolReady, TurnID: t.id, Worker: ts.worker, ToolCall: &agent.ToolCall{
		ID: id, Name: ts.name, DisplayName: ts.name, Input: string(input), Invocation: invocation(ts.name, input),
	}})
	c.spawnWorker(t, id, ts) // workers.go
}

func (c *conversation) handleAssistant(t *hostTurn, l *outLine) {
	if l.UUID != "" {
		t.point = l.UUID
	}
	m := l.Message
	if hasValue(l.Error) || m.Model == "<synthetic>" {
		// The CLI's own message (an API error); the result carries it.
		if hasValue(l.Error) {
			t.failure = strings.Join(m.texts(), "\n")
		}
		return
	}
	streamed := c.streamed[m.ID]
	for _, b := range m.blocks() {
		switch b.Type {
		case "tool_use":
			c.startTool(t, b.ID, b.Name, "")
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			c.readyTool(t, b.ID, input)
		case "text":
			if !streamed && b.Text != "" {
				c.emit(agent.Event{Kind: agent.EventText, TurnID: t.id, PartID: uuid.NewString(), Text: b.Text})
			}
		case "thinking":
			if !streamed && b.Thinking != "" {
				c.emit(agent.Event{Kind: agent.EventReasoning, TurnID: t.id, PartID: uuid.NewString(), Text: b.Thinking})
			}
		}
	}
}

func (c *conversation) handleUser(l *outLine) {
	if l.IsReplay {
		c.handleReplay(l)
		return
	}
	t := c.current()
	if t == nil || l.Message == nil {
		return
	}
	c.toolResults(t, l)
	if l.UUID != "" {
		t.point = l.UUID
	}
}

// toolResults reports the tool calls a user line answers; a spawning
// call's answer ends its worker first.
func (c *conversation) toolResults(t *hostTurn, l *outLine) {
	_, results := l.Message.userContent()
	for _, res := range results {
		delete(c.perms, res.ToolUseID)
		ts := t.tools[res.ToolUseID]
		if ts == nil || ts.done {
			// A call of a turn that already ended (C-TURN-17).
			continue
		}
		ts.done = true
		call := &agent.ToolCall{ID: res.ToolUseID, Name: ts.name, DisplayName: ts.name, Success: !res.IsError}
		if res.IsError {
			call.Error = res.text()
		} else {
			call.Output = res.text()
			call.PastTense = pastTense(ts.name, ts.input)
		}
		if ts.spawn {
			c.workerEnded(t, res.ToolUseID, res.IsError)
		}
		c.emit(agent.Event{Kind: agent.EventToolDone, TurnID: t.id, Worker: ts.worker, ToolCall: call})
	}
}

// handleReplay notes that the CLI took a frame in; a steering message
// taken into its turn is reported consumed.
func (c *conversation) handleReplay(l *outLine) {
	for _, f := range c.frames {
		if f.uuid != l.UUID {
			continue
		}
		f.replayed = true
		t := f.turn
		if t == nil || t.ended {
			return
		}
		t.point = l.UUID
		if f.steeringID != "" && !f.prompt {
			c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: t.id, SteeringID: f.steeringID})
		}
		return
	}
}

func (c *conversation) handleResult(l *outLine) {
	c.stream = streamState{}
	if len(c.frames) == 0 {
		c.log.Debug("claude result with no prompt owed", "subtype", l.Subtype)
		return
	}
	t := c.frames[0].turn
	rest := make([]*frame, 0, len(c.frames))
	for i, f := range c.frames {
		if i == 0 || f.replayed {
			if f.turn != nil {
				f.turn.open--
			}
			if f.steeringID != "" {
				delete(c.steered, f.steeringID)
			}
			continue
		}
		rest = append(rest, f)
	}
	c.frames = rest
	if len(c.frames) > 0 {
		if next := c.frames[0].turn; next != nil && next != t && next.stopping && !next.ended {
			// The interrupt ended a run in front of the stopped turn's
			// (a failed turn's steering); the stopped turn's own run is
			// next, so interrupt that one too.
			c.control(map[string]any{"subtype": "interrupt"})
		}
	}
	if t != nil && !t.ended {
		switch {
		case t.stopping:
			c.endTurn(t, agent.End{Outcome: agent.OutcomeCancelled})
			c.settleStopped(t)
		case l.IsError:
			c.endTurn(t, c.errorEnd(t, l))
			// C-TURN-67, C-TURN-68: its steering's answers go nowhere.
			for _, f := range c.frames {
				if f.turn == t {
					f.turn = nil
				}
			}
		case t.open > 0:
			// The CLI still owes answers to prompts handed in this turn.
			return
		default:
			c.endTurn(t, agent.End{Outcome: agent.OutcomeComplete})
		}
	}
	if c.stopEndsProcess && !c.owesLiveTurn() {
		c.stopEndsProcess = false
		for _, f := range c.frames {
			if f.turn != nil && f.steeringID != "" {
				c.emit(agent.Event{Kind: agent.EventSteeringReturned, TurnID: f.turn.id, SteeringID: f.steeringID})
			}
		}
		c.frames = nil
		c.retire(false)
	}
	c.dispatch()
}

// owesLiveTurn reports whether a frame of a running turn is unanswered.
// c.mu must be held.
func (c *conversation) owesLiveTurn() bool {
	for _, f := range c.frames {
		if f.turn != nil && !f.turn.ended && f.turn.stopping {
			return true
		}
	}
	return false
}

// settleStopped hands the steering messages a stopped turn held and the
// CLI had not taken to a turn of their own, which the CLI runs once the
// interrupt is through (C-TURN-74, C-TURN-75). With StopEndsQuery the
// process ends instead and they go back to the host.
func (c *conversation) settleStopped(t *hostTurn) {
	var left []*frame
	for _, f := range c.frames {
		if f.turn == t {
			left = append(left, f)
		}
	}
	if len(left) == 0 {
		return
	}
	if c.opts.StopEnds == StopEndsQuery {
		for _, f := range left {
			c.emit(agent.Event{Kind: agent.EventSteeringReturned, TurnID: t.id, SteeringID: f.steeringID})
			f.turn = nil
		}
		return
	}
	nt := &hostTurn{id: uuid.NewString(), tools: make(map[string]*toolState)}
	for i, f := range left {
		f.turn = nt
		f.prompt = i == 0
		nt.open++
	}
	c.emit(agent.Event{Kind: agent.EventTurnStarted, TurnID: nt.id, SteeringID: left[0].steeringID})
}

func (c *conversation) endTurn(t *hostTurn, end agent.End) {
	t.ended = true
	end.Point = t.point
	for id, p := range c.perms {
		if p.turn == t {
			delete(c.perms, id)
		}
	}
	c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.id, End: &end})
}

// errorEnd describes a failed result.
func (c *conversation) errorEnd(t *hostTurn, l *outLine) agent.End {
	end := agent.End{Outcome: agent.OutcomeError, ErrorType: l.Subtype, Message: l.Result}
	if l.APIErrorStatus != nil {
		end.ErrorType = "api_error"
	}
	if end.Message == "" {
		end.Message = t.failure
	}
	if end.Message == "" && hasValue(l.Errors) {
		var errs []string
		if json.Unmarshal(l.Errors, &errs) == nil {
			end.Message = strings.Join(errs, "; ")
		} else {
			end.Message = string(l.Errors)
		}
	}
	if end.Message == "" {
		end.Message = "claude ended the turn with " + l.Subtype
		if p := c.proc; p != nil {
			if tail := p.Stderr().Tail(); tail != "" {
				end.Message += ": " + tail
			}
		}
	}
	return end
}

func (c *conversation) handleControlRequest(l *outLine) {
	var req canUseTool
	_ = json.Unmarshal(l.Request, &req)
	if req.Subtype != "can_use_tool" {
		c.writeJSON(controlResponseFrame{Type: "control_response", Response: controlResponse{
			Subtype: "error", RequestID: l.RequestID, Error: "ahpd does not handle " + req.Subtype,
		}})
		return
	}
	t := c.current()
	if t == nil || t.stopping {
		c.answerPermission(&permission{requestID: l.RequestID}, permissionDeny{
			Behavior: "deny", Message: "The turn was stopped.", Interrupt: true,
		})
		return
	}
	worker := ""
	if l.ParentToolUseID != nil && c.knownWorker(t, *l.ParentToolUseID) {
		worker = *l.ParentToolUseID
	}
	ts := c.startTool(t, req.ToolUseID, req.ToolName, worker)
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	c.perms[req.ToolUseID] = &permission{requestID: l.RequestID, turn: t, input: input}
	display := req.DisplayName
	if display == "" {
		display = ts.name
	}
	ts.ready, ts.input = true, input
	c.emit(agent.Event{Kind: agent.EventToolReady, TurnID: t.id, Worker: ts.worker, ToolCall: &agent.ToolCall{
		ID: req.ToolUseID, Name: ts.name, DisplayName: display, Input: string(input),
		Invocation: invocation(ts.name, input), NeedsConfirmation: true,
	}})
}

func (c *conversation) handleControlResponse(l *outLine) {
	if l.Response == nil {
		return
	}
	sub, ours := c.requests[l.Response.RequestID]
	if !ours {
		return // the CLI echoing our answer to one of its requests
	}
	if l.Response.RequestID == c.stopReq {
		c.stopAcked = true // the CLI is alive; the turn winds down
	}
	delete(c.requests, l.Response.RequestID)
	if l.Response.Subtype != "error" {
		if sub == "initialize" && l.Response.Response != nil && c.onCommands != nil {
			cmds := make([]agent.Command, 0, len(l.Response.Response.Commands))
			for _, cmd := range l.Response.Response.Commands {
				cmds = append(cmds, agent.Command{Name: cmd.Name, Description: cmd.Description})
			}
			c.onCommands(cmds)
		}
		return
	}
	if sub == "set_model" {
		// C-TURN-79: the turn runs on the model the CLI has.
		c.log.Warn("claude would not take the model", "model", c.wantModel, "running", c.model, "err", l.Response.Error)
		return
	}
	c.log.Warn("claude refused a control request", "subtype", sub, "err", l.Response.Error)
}

var (
	_ agent.Conversation = (*conversation)(nil)
	_ agent.Killer       = (*conversation)(nil)
)

// hostToolArgs offers the host's tools to the CLI as an MCP server of its
// own (--mcp-config), allowed without asking but those the host names to
// confirm (create_session), which the CLI then asks about as it asks
// about any tool: renaming a chat when asked and reading a #chat: pointer
// change nothing on disk (C-COMP-30).
func hostToolArgs(t *agent.HostTools) []string {
	if t == nil {
		return nil
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{t.ServerName: t.MCPConfig()}})
	if err != nil {
		return nil
	}
	allowed := make([]string, 0, len(t.Names))
	for _, n := range t.Names {
		if !slices.Contains(t.Confirm, n) {
			allowed = append(allowed, "mcp__"+t.ServerName+"__"+n)
		}
	}
	return []string{"--mcp-config", string(cfg), "--allowedTools", strings.Join(allowed, ",")}
}
