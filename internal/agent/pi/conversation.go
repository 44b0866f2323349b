package pi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/agentproc"
	"github.com/ahpd/ahpd/internal/agent/evqueue"
)

// stopGrace is how long a stopped turn waits for pi's agent_end after the
// abort before the backend ends it cancelled itself and replaces the
// process.
const stopGrace = 5 * time.Second

// prepTimeout bounds each step of a turn's preparation (pi's start-up,
// the model switch).
const prepTimeout = 2 * time.Minute

// conversation is one chat's pi conversation: at most one pi process on
// the chat's session file, and the turn that runs.
//
// Locks: mu guards the state below; events are decided under it and
// pushed after it is let go, in order (evqueue.Queue.Emit). The chat
// actor's calls never Emit; what they report goes through PushOwed.
type conversation struct {
	pi     *Pi
	bin    string
	id     string
	cwd    string
	log    *slog.Logger
	events *evqueue.Queue
	// sandbox confines the pi process (agent.OpenParams.Sandbox).
	sandbox func(*exec.Cmd) error

	mu sync.Mutex
	// path is the conversation's session file, handed to pi with --session.
	path string
	proc *process
	// model is what pi runs, as "<provider>/<id>" ("" until pi said).
	model   string
	running *run
	held    agentproc.HeldTurns
	// waiters are the commands waiting for pi's response, by id.
	waiters map[string]chan outLine
	nextID  int
	closed  bool
}

// run is the turn pi runs (or prepares).
type run struct {
	turn agent.Turn
	// ctx is the turn's preparation context; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	proc   *process
	// promptSent: the prompt went to pi, so a stop is an abort; accepted:
	// pi answered it, so steering may go in (C-TURN-82).
	promptSent bool
	accepted   bool
	// abortSent counts the aborts sent for a stop.
	abortSent int
	stopping  bool
	ended     bool
	// agentEnd is closed when pi's run ended (agent_end) or pi exited
	// (exitErr says how).
	agentEnd   chan struct{}
	agentEnded bool
	exitErr    error
	// done is closed when the turn ended.
	done chan struct{}
	// parts maps a content index of the assistant message being streamed
	// to the part it streams into.
	parts    map[int]string
	tools    map[string]*toolState
	usage    agent.Usage
	hasUsage bool
	// stopReason and errorMessage are the last assistant message's.
	stopReason   string
	errorMessage string
	steers       []*steer
}

type toolState struct {
	name        string
	ready, done bool
}

// steer is a steering message handed to pi.
type steer struct {
	id, text string
	// queued: a queue_update showed it in pi's steering queue; consumed:
	// it left the queue into the turn, or pi would not take it.
	queued, consumed bool
}

func newConversation(p *Pi, bin string, op agent.OpenParams, path string) *conversation {
	log := op.Logger
	if log == nil {
		log = discardLogger
	}
	return &conversation{
		pi:      p,
		bin:     bin,
		id:      op.ConversationID,
		cwd:     op.Directories[0],
		log:     log.With("agent", Provider, "conversation", op.ConversationID),
		events:  evqueue.New(),
		path:    path,
		waiters: make(map[string]chan outLine),
		sandbox: agentproc.ToCmd(op.Sandbox),
	}
}

func newRun(t agent.Turn) *run {
	ctx, cancel := context.WithCancel(context.Background())
	return &run{turn: t, ctx: ctx, cancel: cancel, agentEnd: make(chan struct{}), done: make(chan struct{}),
		parts: make(map[int]string), tools: make(map[string]*toolState)}
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
	r := newRun(t)
	c.running = r
	go c.loop(r)
	return nil
}

// loop runs turns one after another: r, then each held one. It is the
// only goroutine that prepares and prompts.
func (c *conversation) loop(r *run) {
	for {
		end := c.runTurn(r)
		c.finish(r, end)
		c.mu.Lock()
		next, ok := c.held.Next()
		if c.closed || !ok {
			c.running = nil
			c.mu.Unlock()
			return
		}
		r = newRun(next)
		c.running = r
		c.mu.Unlock()
	}
}

var cancelledEnd = agent.End{Outcome: agent.OutcomeCancelled}

// stopped reports whether the turn was stopped; preparation asks after
// each step (C-TURN-107), so a turn stopped before its prompt goes out
// ends unsent (C-TURN-108).
func (c *conversation) stopped(r *run) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return r.stopping || c.closed
}

// runTurn prepares pi for the turn, prompts it and says how the turn ended.
func (c *conversation) runTurn(r *run) agent.End {
	defer r.cancel()
	if c.stopped(r) {
		return cancelledEnd
	}
	p, err := c.ensureProcess(r)
	if c.stopped(r) {
		return cancelledEnd
	}
	if err != nil {
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "agentStartFailed", Message: err.Error()}
	}
	if err := c.ensureModel(r, p); err != nil {
		if p.Dead() {
			return c.faultEnd(p, r)
		}
		// The turn runs on the model pi has (as C-TURN-79 says of Claude).
		c.log.Warn("pi would not take the model", "model", r.turn.Model, "err", err)
	}
	message, images := promptOf(r.turn)
	cmd := map[string]any{"type": "prompt", "message": message}
	if len(images) > 0 {
		cmd["images"] = images
	}
	c.mu.Lock()
	if r.stopping || c.closed {
		c.mu.Unlock()
		return cancelledEnd
	}
	r.promptSent, r.proc = true, p
	id, ch := c.waitLocked("prompt")
	cmd["id"] = id
	err = c.writeLocked(p, cmd)
	c.mu.Unlock()
	if err != nil {
		c.dropWaiter(id)
		return agent.End{Outcome: agent.OutcomeError, ErrorType: "agentFault", Message: fmt.Sprintf("send the prompt to pi: %v", err)}
	}
	select {
	case resp := <-ch:
		if !resp.Success {
			c.mu.Lock()
			stopping := r.stopping
			c.mu.Unlock()
			if stopping {
				return cancelledEnd
			}
			return agent.End{Outcome: agent.OutcomeError, ErrorType: "promptRefused", Message: "pi refused the prompt: " + resp.Error}
		}
	case <-r.agentEnd:
	case <-r.done:
	}
	select {
	case <-r.agentEnd:
	case <-r.done:
		return cancelledEnd // ended by the stop's watchdog
	}
	return c.endOf(r, p)
}

// endOf says how a run pi ended (or that exited) ended.
func (c *conversation) endOf(r *run, p *process) agent.End {
	c.mu.Lock()
	stopping, exitErr, reason, msg := r.stopping, r.exitErr, r.stopReason, r.errorMessage
	c.mu.Unlock()
	if exitErr != nil {
		if stopping {
			return cancelledEnd
		}
		return c.faultEnd(p, r)
	}
	var end agent.End
	switch {
	case stopping || reason == "aborted":
		end = cancelledEnd
	case reason == "error":
		if msg == "" {
			msg = "pi ended the turn with an error"
		}
		end = agent.End{Outcome: agent.OutcomeError, ErrorType: "modelError", Message: msg}
	case reason == "length":
		end = agent.End{Outcome: agent.OutcomeError, ErrorType: "length", Message: "the model reached its token limit"}
	default:
		end = agent.End{Outcome: agent.OutcomeComplete}
	}
	c.mu.Lock()
	path := c.path
	c.mu.Unlock()
	if leaf, err := leafOf(path); err == nil {
		end.Point = leaf
	} else {
		c.log.Debug("no point for the turn", "err", err)
	}
	return end
}

// faultEnd describes a pi that exited under a turn; the next turn starts
// a fresh process.
func (c *conversation) faultEnd(p *process, r *run) agent.End {
	c.dropProcess(p)
	return agent.End{Outcome: agent.OutcomeError, ErrorType: "agentFault",
		Message: fmt.Sprintf("pi exited during the turn: %v", p.ExitError())}
}

// finish ends the turn once: the steering messages pi still holds go back
// to the host first (C-TURN-86), then its usage, then its end.
func (c *conversation) finish(r *run, end agent.End) {
	var retire *process
	c.emit(func() []agent.Event {
		if r.ended {
			return nil
		}
		r.ended = true
		close(r.done)
		var evs []agent.Event
		handed := false
		for _, s := range r.steers {
			if s.consumed {
				continue
			}
			s.consumed = true
			handed = true
			evs = append(evs, agent.Event{Kind: agent.EventSteeringReturned, TurnID: r.turn.ID, SteeringID: s.id})
		}
		if handed && c.proc != nil && c.proc == r.proc {
			// pi keeps a steering message it did not use for its next
			// run, and its RPC cannot take one back: the process goes, and
			// the next turn's resumes the session without it.
			retire, c.proc = c.proc, nil
		}
		if r.hasUsage {
			u := r.usage
			evs = append(evs, agent.Event{Kind: agent.EventUsage, TurnID: r.turn.ID, Usage: &u})
		}
		e := end
		return append(evs, agent.Event{Kind: agent.EventTurnEnd, TurnID: r.turn.ID, End: &e})
	})
	if retire != nil {
		c.log.Info("pi holds a steering message its turn did not use; replacing the process")
		go retire.Close()
	}
}

// emit decides on events under mu (decide runs with it held) and pushes
// them in that order.
func (c *conversation) emit(decide func() []agent.Event) { c.events.Emit(&c.mu, decide) }

// ensureProcess starts pi on the session file when none runs, and waits
// until it answers get_state (pi buffers commands while it starts).
func (c *conversation) ensureProcess(r *run) (*process, error) {
	c.mu.Lock()
	if p := c.proc; p != nil && !p.Dead() {
		c.mu.Unlock()
		return p, nil
	}
	path := c.path
	c.mu.Unlock()
	if err := c.pi.writeModels(); err != nil {
		return nil, err
	}
	args := []string{"--mode", "rpc", "--session", path}
	if m := c.pi.opts.defaultModel(); m != "" {
		args = append(args, "--model", m)
	}
	args = append(args, c.pi.opts.ExtraArgs...)
	p, err := c.startProcess(args)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		go p.Close()
		return nil, errors.New("conversation closed")
	}
	c.proc = p
	c.mu.Unlock()
	resp, err := c.request(r.ctx, p, map[string]any{"type": "get_state"})
	if err != nil {
		if p.Dead() {
			err = p.ExitError()
		}
		c.dropProcess(p)
		return nil, fmt.Errorf("pi did not start: %w", err)
	}
	var st stateData
	if resp.Success && json.Unmarshal(resp.Data, &st) == nil && st.Model != nil {
		c.mu.Lock()
		c.model = st.Model.Provider + "/" + st.Model.ID
		c.mu.Unlock()
	}
	return p, nil
}

// ensureModel switches pi to the turn's model when it names another one.
func (c *conversation) ensureModel(r *run, p *process) error {
	want := r.turn.Model
	c.mu.Lock()
	have := c.model
	c.mu.Unlock()
	if want == "" || want == have {
		return nil
	}
	prov, model, ok := strings.Cut(want, "/")
	if !ok {
		return fmt.Errorf("model %q: want <provider>/<model>", want)
	}
	resp, err := c.request(r.ctx, p, map[string]any{"type": "set_model", "provider": prov, "modelId": model})
	if err != nil {
		return err
	}
	if !resp.Success {
		return errors.New(resp.Error)
	}
	c.mu.Lock()
	c.model = want
	c.mu.Unlock()
	return nil
}

// request sends a command and waits for pi's response.
func (c *conversation) request(ctx context.Context, p *process, cmd map[string]any) (outLine, error) {
	ctx, cancel := context.WithTimeout(ctx, prepTimeout)
	defer cancel()
	typ, _ := cmd["type"].(string)
	c.mu.Lock()
	id, ch := c.waitLocked(typ)
	cmd["id"] = id
	err := c.writeLocked(p, cmd)
	c.mu.Unlock()
	if err != nil {
		c.dropWaiter(id)
		return outLine{}, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-p.Exited():
		c.dropWaiter(id)
		return outLine{}, p.ExitError()
	case <-ctx.Done():
		c.dropWaiter(id)
		return outLine{}, fmt.Errorf("pi did not answer %s: %w", typ, ctx.Err())
	}
}

// waitLocked names a command and registers for its response. c.mu must
// be held.
func (c *conversation) waitLocked(typ string) (string, chan outLine) {
	c.nextID++
	id := "ahpd-" + typ + "-" + strconv.Itoa(c.nextID)
	ch := make(chan outLine, 1)
	c.waiters[id] = ch
	return id, ch
}

func (c *conversation) dropWaiter(id string) {
	c.mu.Lock()
	delete(c.waiters, id)
	c.mu.Unlock()
}

// writeLocked writes one command line to p. c.mu must be held.
func (c *conversation) writeLocked(p *process, cmd map[string]any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	return p.WriteLine(b)
}

// dropProcess forgets p and ends it, so the next turn starts a fresh one
// on the same session file.
func (c *conversation) dropProcess(p *process) {
	c.mu.Lock()
	if c.proc == p {
		c.proc = nil
	}
	c.mu.Unlock()
	if !p.Dead() {
		go p.Kill()
	}
}

// Steer hands a steering message to pi once pi has the turn's prompt
// (C-TURN-82); until then it declines (C-TURN-83).
func (c *conversation) Steer(s agent.Steering) agent.SteerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.running
	if r == nil || r.turn.ID != s.TurnID {
		return agent.SteerNotYet
	}
	for _, st := range r.steers {
		if st.id == s.ID {
			return agent.SteerTaken
		}
	}
	if !r.accepted || r.stopping || r.ended || r.agentEnded || c.closed || r.proc == nil || r.proc != c.proc {
		return agent.SteerNotYet
	}
	if strings.TrimSpace(s.Text) == "" {
		c.log.Warn("pi takes no empty steering message", "steering", s.ID)
		return agent.SteerRefused
	}
	id := "ahpd-steer-" + s.ID
	if err := c.writeLocked(r.proc, map[string]any{"id": id, "type": "steer", "message": s.Text}); err != nil {
		// pi's stdin is gone: the process is dying, and its exit ends the
		// turn. The message stays the host's and steers the next turn, in
		// a fresh pi (C-TURN-86), as one pi took and then died with does;
		// refused, the host would take it out.
		c.log.Warn("steering message not sent to pi; it stays pending", "steering", s.ID, "err", err)
		return agent.SteerNotYet
	}
	r.steers = append(r.steers, &steer{id: s.ID, text: s.Text})
	return agent.SteerTaken
}

// Withdraw: pi's RPC cannot take a steering message back.
func (c *conversation) Withdraw(id string) bool { return false }

// Confirm: pi runs its tools without asking.
func (c *conversation) Confirm(turnID, toolCallID string, approved bool) error {
	return fmt.Errorf("confirm tool call %s: pi asks for no confirmations", toolCallID)
}

// Stop ends the held turns cancelled and stops the running one: before its
// prompt goes out its preparation is abandoned; after, pi is sent abort,
// and the turn ends cancelled at pi's agent_end, or after stopGrace, when
// the process is replaced.
func (c *conversation) Stop(ctx context.Context) error {
	c.mu.Lock()
	held := c.held.Drop()
	r := c.running
	var p *process
	if r != nil && !r.ended && !r.stopping {
		r.stopping = true
		if r.promptSent {
			p = r.proc
			c.abortLocked(r)
		} else {
			r.cancel()
		}
	}
	c.mu.Unlock()
	for _, t := range held {
		c.events.PushOwed(agent.Event{Kind: agent.EventTurnEnd, TurnID: t.ID, End: &agent.End{Outcome: agent.OutcomeCancelled}})
	}
	if p != nil {
		go c.stopWatchdog(r, p)
	}
	return nil
}

// abortLocked sends pi an abort for r. c.mu must be held.
func (c *conversation) abortLocked(r *run) {
	if r.proc == nil || r.proc.Dead() {
		return
	}
	r.abortSent++
	if err := c.writeLocked(r.proc, map[string]any{"type": "abort"}); err != nil {
		c.log.Warn("abort not sent to pi", "err", err)
	}
}

// stopWatchdog ends a stopped turn pi did not end within stopGrace and
// replaces the process.
func (c *conversation) stopWatchdog(r *run, p *process) {
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-r.done:
		return
	case <-r.agentEnd:
		return
	case <-t.C:
	}
	c.log.Warn("pi did not end the stopped turn in time; replacing its process")
	c.dropProcess(p)
	c.finish(r, cancelledEnd)
}

// Close ends the process; pi's session file stays.
func (c *conversation) Close() error { return c.close(false) }

// Kill ends pi at once, for one that stopped answering (agent.Killer).
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
	c.held.Drop()
	if r := c.running; r != nil {
		r.cancel()
	}
	c.mu.Unlock()
	c.events.Abandon()
	if p != nil {
		if kill {
			p.Kill()
		}
		p.Close()
	}
	return nil
}

// processExited is called by a process's reader once it has been reaped:
// the turn it ran learns how it went.
func (c *conversation) processExited(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == p {
		c.proc = nil
	}
	if r := c.running; r != nil && r.proc == p && !r.agentEnded {
		r.agentEnded = true
		r.exitErr = p.ExitError()
		close(r.agentEnd)
	}
	if !c.closed {
		c.log.Info("pi exited", "err", p.ExitError())
	}
}

// current is the running turn pi's output belongs to, or nil.
// c.mu must be held.
func (c *conversation) current(p *process) *run {
	r := c.running
	if r == nil || r.proc != p || r.ended || r.agentEnded {
		return nil
	}
	return r
}

// handleLine handles one stdout line; it runs on p's reader goroutine.
// A line that is not JSON is logged and skipped.
func (c *conversation) handleLine(p *process, line []byte) {
	var l outLine
	if err := json.Unmarshal(line, &l); err != nil {
		c.log.Warn("pi printed a line that is not JSON; skipped", "line", agentproc.Clip(string(line), 200))
		return
	}
	switch l.Type {
	case "response":
		c.handleResponse(p, &l)
	case "message_start", "message_update", "message_end",
		"tool_execution_start", "tool_execution_end", "queue_update", "agent_end", "compaction_end":
		c.emit(func() []agent.Event { return c.handleEvent(p, &l, line) })
	case "agent_start", "turn_start":
		c.mu.Lock()
		if r := c.current(p); r != nil && r.stopping && r.abortSent < 2 {
			// The abort may have come before pi began the run.
			c.abortLocked(r)
		}
		c.mu.Unlock()
	case "auto_retry_start":
		c.log.Info("pi retries the model call", "attempt", l.Attempt, "max", l.MaxAttempt, "err", l.ErrorMsg)
	case "extension_ui_request":
		c.answerExtension(p, &l)
	case "extension_error":
		c.log.Warn("pi extension error", "line", agentproc.Clip(string(line), 500))
	}
}

// handleResponse hands a response to the command waiting for it; a
// steering message pi would not take is taken out (C-TURN-85).
func (c *conversation) handleResponse(p *process, l *outLine) {
	if sid, ok := strings.CutPrefix(l.ID, "ahpd-steer-"); ok {
		if l.Success {
			return
		}
		c.emit(func() []agent.Event {
			r := c.current(p)
			if r == nil {
				return nil
			}
			for _, s := range r.steers {
				if s.id == sid && !s.consumed {
					s.consumed = true
					c.log.Warn("pi would not take the steering message; taken out", "steering", sid, "reason", l.Error)
					return []agent.Event{{Kind: agent.EventSteeringConsumed, TurnID: r.turn.ID, SteeringID: sid}}
				}
			}
			return nil
		})
		return
	}
	c.mu.Lock()
	ch, ok := c.waiters[l.ID]
	delete(c.waiters, l.ID)
	if r := c.running; r != nil && r.proc == p && l.Command == "prompt" && l.Success {
		r.accepted = true
		if r.stopping && r.abortSent < 2 {
			c.abortLocked(r)
		}
	}
	c.mu.Unlock()
	if ok {
		ch <- *l
		return
	}
	if !l.Success {
		c.log.Warn("pi refused a command", "command", l.Command, "err", l.Error)
	}
}

// answerExtension answers an extension's dialog cancelled: ahpd shows no
// extension UI, and a dialog left open would hold the turn.
func (c *conversation) answerExtension(p *process, l *outLine) {
	switch l.Method {
	case "select", "confirm", "input", "editor":
		c.log.Info("pi extension asked a question; answered cancelled", "method", l.Method)
		c.mu.Lock()
		_ = c.writeLocked(p, map[string]any{"type": "extension_ui_response", "id": l.ID, "cancelled": true})
		c.mu.Unlock()
	}
}

// handleEvent maps one of pi's events to the turn's events. c.mu is held.
func (c *conversation) handleEvent(p *process, l *outLine, line []byte) []agent.Event {
	r := c.current(p)
	if r == nil {
		return nil
	}
	tid := r.turn.ID
	switch l.Type {
	case "message_start":
		if l.Message != nil && l.Message.Role == "assistant" {
			r.parts = make(map[int]string)
		}
	case "message_update":
		if l.Event == nil {
			return nil
		}
		return c.handleUpdate(r, l.Event)
	case "message_end":
		m := l.Message
		if m == nil || m.Role != "assistant" {
			return nil
		}
		r.stopReason, r.errorMessage = m.StopReason, m.ErrorMessage
		var evs []agent.Event
		// A tool call pi did not stream is reported from the message.
		for _, b := range m.blocks() {
			if b.Type == "toolCall" && b.ID != "" {
				evs = append(evs, c.toolReady(r, b.ID, b.Name, b.Arguments)...)
			}
		}
		if u := m.Usage; u != nil {
			r.usage.InputTokens += u.Input
			r.usage.OutputTokens += u.Output
			r.usage.CacheRead += u.CacheRead
			if m.Model != "" {
				r.usage.Model = m.Provider + "/" + m.Model
			}
			r.hasUsage = true
		}
		return evs
	case "tool_execution_start":
		return c.toolReady(r, l.ToolCallID, l.ToolName, l.Args)
	case "tool_execution_end":
		evs := c.toolReady(r, l.ToolCallID, l.ToolName, l.Args)
		ts := r.tools[l.ToolCallID]
		if ts == nil || ts.done {
			return evs
		}
		ts.done = true
		call := &agent.ToolCall{ID: l.ToolCallID, Name: ts.name, DisplayName: ts.name, Success: !l.IsError}
		if l.IsError {
			call.Error = l.Result.text()
		} else {
			call.Output = l.Result.text()
		}
		return append(evs, agent.Event{Kind: agent.EventToolDone, TurnID: tid, ToolCall: call})
	case "queue_update":
		return c.queueUpdate(r, l.Steering)
	case "compaction_end":
		var ce compactionEnd
		if json.Unmarshal(line, &ce) != nil || ce.Result == nil {
			return nil
		}
		return []agent.Event{{Kind: agent.EventNotice, TurnID: tid, Text: compactionNotice(l.Reason, ce.Result.TokensBefore)}}
	case "agent_end":
		r.agentEnded = true
		close(r.agentEnd)
	}
	return nil
}

// compactionNotice is the systemNotification a compaction becomes.
func compactionNotice(reason string, tokensBefore int) string {
	why := ""
	switch reason {
	case "threshold":
		why = " as the context neared its limit"
	case "overflow":
		why = " after the context overflowed"
	case "manual":
		why = " on request"
	}
	return fmt.Sprintf("pi compacted the conversation%s: %d tokens were summarized.", why, tokensBefore)
}

// handleUpdate maps a message_update's delta. c.mu is held.
func (c *conversation) handleUpdate(r *run, e *messageEvent) []agent.Event {
	tid := r.turn.ID
	part := func() string {
		id, ok := r.parts[e.ContentIndex]
		if !ok {
			id = uuid.NewString()
			r.parts[e.ContentIndex] = id
		}
		return id
	}
	switch e.Type {
	case "text_start", "thinking_start":
		r.parts[e.ContentIndex] = uuid.NewString()
	case "text_delta":
		if e.Delta != "" {
			return []agent.Event{{Kind: agent.EventText, TurnID: tid, PartID: part(), Text: e.Delta}}
		}
	case "thinking_delta":
		if e.Delta != "" {
			return []agent.Event{{Kind: agent.EventReasoning, TurnID: tid, PartID: part(), Text: e.Delta}}
		}
	case "toolcall_start":
		b := e.partialBlock()
		if b.ID == "" {
			return nil
		}
		r.parts[e.ContentIndex] = b.ID
		if r.tools[b.ID] != nil {
			return nil
		}
		r.tools[b.ID] = &toolState{name: b.Name}
		return []agent.Event{{Kind: agent.EventToolStart, TurnID: tid, ToolCall: &agent.ToolCall{ID: b.ID, Name: b.Name, DisplayName: b.Name}}}
	case "toolcall_delta":
		id := r.parts[e.ContentIndex]
		if ts := r.tools[id]; ts != nil && !ts.ready && e.Delta != "" {
			return []agent.Event{{Kind: agent.EventToolInput, TurnID: tid, Text: e.Delta, ToolCall: &agent.ToolCall{ID: id}}}
		}
	case "toolcall_end":
		if b := e.ToolCall; b != nil && b.ID != "" {
			return c.toolReady(r, b.ID, b.Name, b.Arguments)
		}
	}
	return nil
}

// toolReady reports a tool call's start (when not streamed) and its
// complete input, once. c.mu is held.
func (c *conversation) toolReady(r *run, id, name string, args json.RawMessage) []agent.Event {
	if id == "" {
		return nil
	}
	var evs []agent.Event
	ts := r.tools[id]
	if ts == nil {
		ts = &toolState{name: name}
		r.tools[id] = ts
		evs = append(evs, agent.Event{Kind: agent.EventToolStart, TurnID: r.turn.ID, ToolCall: &agent.ToolCall{ID: id, Name: name, DisplayName: name}})
	}
	if ts.ready {
		return evs
	}
	ts.ready = true
	if ts.name == "" {
		ts.name = name
	}
	input := string(args)
	if !json.Valid(args) {
		input = "{}"
	}
	return append(evs, agent.Event{Kind: agent.EventToolReady, TurnID: r.turn.ID, ToolCall: &agent.ToolCall{
		ID: id, Name: ts.name, DisplayName: ts.name, Input: input, Invocation: invocation(ts.name, args),
	}})
}

// invocation is a one-line description of a call of one of pi's tools.
func invocation(name string, args json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(args, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch name {
	case "bash":
		if s := str("command"); s != "" {
			return "Run `" + agentproc.Clip(s, 200) + "`"
		}
	case "read", "edit", "write":
		if s := str("path"); s != "" {
			return strings.ToUpper(name[:1]) + name[1:] + " " + s
		}
	}
	return name
}

// queueUpdate reconciles pi's steering queue with the steering messages
// handed to it: one that entered the queue and left it went into the turn
// (C-TURN-84). pi takes them out oldest first, matching by text. c.mu is
// held.
func (c *conversation) queueUpdate(r *run, queue []string) []agent.Event {
	count := make(map[string]int, len(queue))
	for _, t := range queue {
		count[t]++
	}
	var evs []agent.Event
	seen := make(map[string]bool)
	for _, s := range r.steers {
		if s.consumed || seen[s.text] {
			continue
		}
		seen[s.text] = true
		var live []*steer
		queued := 0
		for _, o := range r.steers {
			if !o.consumed && o.text == s.text {
				live = append(live, o)
				if o.queued {
					queued++
				}
			}
		}
		n := count[s.text]
		switch {
		case n > queued:
			for _, o := range live {
				if n == queued {
					break
				}
				if !o.queued {
					o.queued = true
					queued++
				}
			}
		case n < queued:
			gone := queued - n
			for _, o := range live {
				if gone == 0 {
					break
				}
				if o.queued {
					o.consumed = true
					gone--
					evs = append(evs, agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.turn.ID, SteeringID: o.id})
				}
			}
		}
	}
	return evs
}

var (
	_ agent.Conversation = (*conversation)(nil)
	_ agent.Killer       = (*conversation)(nil)
)
