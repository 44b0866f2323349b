package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ahpd/ahpd/internal/agent"
)

// eventBuffer is how many events a conversation buffers for a slow reader.
const eventBuffer = 32

const (
	// answerDeltas is how many deltas a normal answer streams in.
	answerDeltas = 3
	// slowDeltas is how many deltas a [slow] answer streams in (fewer when
	// the answer has fewer runes).
	slowDeltas = 20
)

// Errors that end a turn early.
var (
	// errStopped: Stop stopped the turn.
	errStopped = errors.New("stopped")
	// errClosed: Close closed the conversation.
	errClosed = errors.New("closed")
	// errExited: the turn said [exit].
	errExited = errors.New("exited")
)

// conversation is one open script conversation.
//
// Its loop goroutine is the only sender on events: it takes turns off queue
// one at a time and runs them. The chat actor's calls (Send, Steer, Stop,
// ...) only touch the fields under mu and poke wake, so none of them blocks.
type conversation struct {
	s      *Script
	id     string
	model  string
	logger *slog.Logger

	events chan agent.Event
	// done is closed by Close; every wait of the loop also waits on it, so
	// the loop never blocks forever on events after Close.
	done      chan struct{}
	closeOnce sync.Once
	// wake is the loop's 1-buffered wake-up channel.
	wake chan struct{}
	// loopDone is closed when the loop has returned and closed events.
	loopDone chan struct{}
	// late holds the steering a [late] turn took and never read; the loop
	// owns it and hands it back before the next turn starts, or LateDelay
	// after the turn's end.
	late []agent.Steering

	// mu guards queue, active, closed and exited.
	mu sync.Mutex
	// queue holds the turns sent and not started yet, in order. A stop
	// marks them cancelled and the loop ends each in turn.
	queue []*queued
	// active is the turn the loop runs, nil between turns. The loop clears
	// it before reporting the turn's end, so a Send that follows the end
	// finds nothing running.
	active *active
	closed bool
	exited bool
	// stuckClose: a [stuck-close] turn ran; Close takes CloseDelay.
	stuckClose bool
	// workerStops holds each worker's stop channel, closed by StopWorker;
	// release is closed by a turn that says [release] (worker.go).
	workerStops map[string]chan struct{}
	release     chan struct{}
	// bg tracks the background workers' goroutines; the loop waits for
	// them before it closes events.
	bg sync.WaitGroup
}

// queued is a turn waiting for the loop.
type queued struct {
	turn      agent.Turn
	cancelled bool
}

// active is the running turn's shared state; fields other than turn, stop
// and confirm are guarded by conversation.mu.
type active struct {
	turn agent.Turn
	// preparing: the turn's prompt is not out yet; steering is not taken.
	preparing bool
	// stop is closed by Stop (stopped set).
	stop    chan struct{}
	stopped bool
	// steering holds the messages taken and not read yet, in order.
	steering []agent.Steering
	// waitingTool is the tool call waiting for Confirm, "" when none.
	waitingTool string
	// confirm carries Confirm's answer; 1-buffered, sent on at most once.
	confirm chan bool
	// client is the client-run call waiting for its result, nil when none
	// (clienttool.go).
	client *clientWait
	// ask is the input request waiting for its answer, nil when none
	// (ask.go).
	ask *askWait
}

func newConversation(s *Script, id, model string, logger *slog.Logger) *conversation {
	return &conversation{
		s:        s,
		id:       id,
		model:    model,
		logger:   logger,
		events:   make(chan agent.Event, eventBuffer),
		done:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		loopDone: make(chan struct{}),
	}
}

// Send queues a turn; the loop starts it once the turn in front of it ends.
// Without OneTurnAtATime, a turn sent while another runs is an error.
func (c *conversation) Send(ctx context.Context, t agent.Turn) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send turn %s: %w", t.ID, err)
	}
	if t.ID == "" {
		return errors.New("send turn: empty turn id")
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return fmt.Errorf("send turn %s: conversation %s is closed", t.ID, c.id)
	case c.exited:
		c.mu.Unlock()
		return fmt.Errorf("send turn %s: conversation %s has exited", t.ID, c.id)
	case !c.s.opts.Caps.OneTurnAtATime && (c.active != nil || len(c.queue) > 0):
		c.mu.Unlock()
		return fmt.Errorf("send turn %s: a turn is running in conversation %s", t.ID, c.id)
	}
	c.queue = append(c.queue, &queued{turn: t})
	c.stuckClose = c.stuckClose || strings.Contains(t.Text, "[stuck-close]")
	if strings.Contains(t.Text, "[release]") {
		c.releaseWorkersLocked()
	}
	c.mu.Unlock()
	c.s.recordPrompt(c.id, t)
	c.poke()
	return nil
}

// Steer takes a steering message into the running turn, which reads it at
// its next step. Every call is logged with its answer (Script.Steers).
func (c *conversation) Steer(s agent.Steering) agent.SteerResult {
	r := c.steer(s)
	c.s.recordSteer(c.id, s, r)
	return r
}

func (c *conversation) steer(s agent.Steering) agent.SteerResult {
	if !c.s.opts.Caps.Steering {
		return agent.SteerUnsupported
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.active
	if a == nil || a.preparing || a.stopped || (s.TurnID != "" && s.TurnID != a.turn.ID) {
		return agent.SteerNotYet
	}
	if strings.Contains(s.Text, "[refuse]") {
		return agent.SteerRefused
	}
	for _, held := range a.steering {
		if held.ID == s.ID {
			return agent.SteerTaken
		}
	}
	a.steering = append(a.steering, s)
	return agent.SteerTaken
}

// Withdraw takes back a steering message the running turn has not read.
func (c *conversation) Withdraw(id string) bool {
	if !c.s.opts.Caps.Withdraw {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.active
	if a == nil {
		return false
	}
	for i, held := range a.steering {
		if held.ID == id {
			a.steering = append(a.steering[:i:i], a.steering[i+1:]...)
			return true
		}
	}
	return false
}

// Confirm answers the tool call the running turn waits on.
func (c *conversation) Confirm(turnID, toolCallID string, approved bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.active
	if a == nil || a.turn.ID != turnID {
		return fmt.Errorf("confirm tool call %s: turn %s is not running", toolCallID, turnID)
	}
	if a.waitingTool == "" || a.waitingTool != toolCallID {
		return fmt.Errorf("confirm tool call %s: no such call waits in turn %s", toolCallID, turnID)
	}
	a.waitingTool = ""
	a.confirm <- approved
	return nil
}

// Stop stops the running turn and cancels every turn held behind it; the
// loop ends the running one first, then the held ones in order.
func (c *conversation) Stop(ctx context.Context) error {
	c.mu.Lock()
	for _, q := range c.queue {
		q.cancelled = true
	}
	if a := c.active; a != nil && !a.stopped {
		a.stopped = true
		close(a.stop)
	}
	c.mu.Unlock()
	c.poke()
	return nil
}

// Events is the stream of what happened; closed by Close or an [exit].
func (c *conversation) Events() <-chan agent.Event { return c.events }

// Close ends the conversation: the loop returns and closes Events. The kept
// conversation stays.
func (c *conversation) Close() error {
	if f := c.s.opts.OnClose; f != nil {
		f(c.id)
	}
	c.mu.Lock()
	c.closed = true
	stuck := c.stuckClose
	c.mu.Unlock()
	if stuck {
		time.Sleep(c.s.opts.CloseDelay)
	}
	c.closeOnce.Do(func() { close(c.done) })
	<-c.loopDone
	return nil
}

func (c *conversation) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// emit reports ev, waiting for room in events unless the conversation is
// closed; false when it is.
func (c *conversation) emit(ev agent.Event) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.events <- ev:
		return true
	case <-c.done:
		return false
	}
}

// loop is the conversation's goroutine, started by Open and ended by Close
// or an [exit]: it runs the queued turns one at a time and is the only
// sender on events, which it closes when it returns.
func (c *conversation) loop() {
	defer close(c.loopDone)
	defer close(c.events)
	defer c.bg.Wait()
	for {
		if !c.settleLate() {
			return
		}
		q, a, ok := c.next()
		if !ok {
			return
		}
		if a == nil {
			// Cancelled by a stop while held: it never ran.
			if !c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: q.turn.ID, End: &agent.End{Outcome: agent.OutcomeCancelled}}) {
				return
			}
			continue
		}
		r := &turnRun{c: c, a: a, m: parseMarkers(a.turn.Text), ids: a.turn.ID}
		if err := r.run(); err != nil {
			return
		}
	}
}

// settleLate hands back the steering a [late] turn left, once a next turn
// is sent or LateDelay has passed; false once the conversation is closed.
func (c *conversation) settleLate() bool {
	if len(c.late) == 0 {
		return true
	}
	timer := time.NewTimer(c.s.opts.LateDelay)
	defer timer.Stop()
	for {
		c.mu.Lock()
		sent := len(c.queue) > 0
		c.mu.Unlock()
		if sent {
			break
		}
		select {
		case <-c.wake:
			continue
		case <-timer.C:
		case <-c.done:
			return false
		}
		break
	}
	late := c.late
	c.late = nil
	for _, s := range late {
		if !c.emit(agent.Event{Kind: agent.EventSteeringReturned, TurnID: s.TurnID, SteeringID: s.ID}) {
			return false
		}
	}
	// The wake-up taken above may have been for a turn sent since.
	c.poke()
	return true
}

// next takes the head of the queue, making it the active turn unless a stop
// cancelled it (then a is nil); ok is false once the conversation is closed.
func (c *conversation) next() (q *queued, a *active, ok bool) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			q = c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			if !q.cancelled {
				a = &active{
					turn:      q.turn,
					preparing: strings.Contains(q.turn.Text, "[prep]"),
					stop:      make(chan struct{}),
					confirm:   make(chan bool, 1),
				}
				c.active = a
			}
			c.mu.Unlock()
			return q, a, true
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.done:
			return nil, nil, false
		}
	}
}

// markers are what a turn's text asks for.
type markers struct {
	think, tool, confirm, slow, hold, prep, exit, deaf, late, stubborn, worker, ask bool
	// fail: [error] or [error:resumable]; resumable: the latter.
	fail, resumable bool
	// burst is [burst:N]: N deltas of burstChunk at once, no delay, so a
	// benchmark's producer is never its bottleneck.
	burst int
}

// burstChunk is one delta of a [burst:N] answer; maxBurst bounds N.
const (
	burstChunk = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do. "
	maxBurst   = 100000
)

var burstRE = regexp.MustCompile(`\[burst:(\d+)\]`)

func parseMarkers(text string) markers {
	has := func(m string) bool { return strings.Contains(text, m) }
	return markers{
		think:     has("[think]"),
		tool:      has("[tool]"),
		confirm:   has("[confirm]"),
		slow:      has("[slow]"),
		hold:      has("[hold]"),
		prep:      has("[prep]"),
		exit:      has("[exit]"),
		deaf:      has("[deaf]") || has("[late]"),
		late:      has("[late]"),
		stubborn:  has("[stubborn]"),
		worker:    has("[worker"),
		ask:       has("[ask]"),
		fail:      has("[error]") || has("[error:resumable]"),
		resumable: has("[error:resumable]"),
		burst:     burstOf(text),
	}
}

func burstOf(text string) int {
	m := burstRE.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n > maxBurst {
		return maxBurst
	}
	return n
}

// turnRun runs one turn on the loop goroutine.
type turnRun struct {
	c *conversation
	a *active
	m markers
	// point names where the turn ended once its prompt went out.
	point string
	// last is the kind of the last part begun (text, reasoning, tool), so a
	// text or reasoning delta after another kind begins a new part.
	last agent.EventKind
	// markdownParts and reasoningParts count the parts begun.
	markdownParts, reasoningParts int
	// openTool is the turn's tool call begun and not answered yet.
	openTool *agent.ToolCall
	// ids prefixes the ids of the turn's parts and tool call: the turn's
	// id, and "<id>-r<n>" for its n-th resumed attempt.
	ids string
}

// run runs the turn to its end; a non-nil error means the loop must return
// (closed or exited).
func (r *turnRun) run() error {
	err := r.body()
	if errors.Is(err, errStopped) {
		if r.m.stubborn {
			if err := r.answerAfterStop(); err != nil {
				return err
			}
		}
		return r.finish(&agent.End{Outcome: agent.OutcomeCancelled, Point: r.point})
	}
	return err
}

func (r *turnRun) body() error {
	c, t := r.c, r.a.turn
	delay := c.s.opts.DeltaDelay
	if r.m.slow {
		delay = c.s.opts.SlowDelay
	}
	if r.m.prep {
		// The prompt is not out yet: a stop here ends the turn unsent.
		if err := r.pause(3 * c.s.opts.SlowDelay); err != nil {
			return err
		}
		c.mu.Lock()
		r.a.preparing = false
		c.mu.Unlock()
	}
	if err := r.check(); err != nil {
		return err
	}
	index, resumed := c.s.admit(c.id, t)
	r.point = fmt.Sprintf("%s#%d", c.id, index)
	if resumed > 0 {
		// A resumed attempt's parts and tool call never reuse the ids of an
		// earlier attempt's, which the resumed turn still holds.
		r.ids = fmt.Sprintf("%s-r%d", t.ID, resumed)
	}
	c.logger.Debug("turn started", "turn", t.ID, "point", r.point, "resumed", resumed)

	if r.m.think {
		for i, piece := range split("thinking about: "+t.Text, answerDeltas) {
			if err := r.between(i, delay); err != nil {
				return err
			}
			if err := r.reasoning(piece); err != nil {
				return err
			}
		}
	}
	if r.m.tool || r.m.confirm {
		if err := r.toolCall(); err != nil {
			return err
		}
		if err := r.step(); err != nil {
			return err
		}
	}
	if r.m.worker {
		if err := r.spawnWorker(); err != nil {
			return err
		}
		if err := r.step(); err != nil {
			return err
		}
	}

	if r.m.burst > 0 {
		for range r.m.burst {
			if err := r.text(burstChunk); err != nil {
				return err
			}
		}
		return r.finish(&agent.End{Outcome: agent.OutcomeComplete, Point: r.point})
	}
	answer := "echo: " + t.Text
	if m := clientToolRE.FindStringSubmatch(t.Text); m != nil {
		said, err := r.clientToolCall(r.ids+"-client-1", m[1], "")
		if err != nil {
			return err
		}
		answer = said
	}
	if r.m.ask {
		said, err := r.askColour()
		if err != nil {
			return err
		}
		answer = said
	}
	if t.HostContext != "" {
		answer = fmt.Sprintf("(context: %d chars) %s", utf8.RuneCountInString(t.HostContext), answer)
	}
	n := answerDeltas
	if r.m.slow {
		n = slowDeltas
	}
	for i, piece := range split(answer, n) {
		if err := r.between(i, delay); err != nil {
			return err
		}
		if err := r.text(piece); err != nil {
			return err
		}
		if i > 0 {
			continue
		}
		if r.m.exit {
			return r.exit()
		}
		if r.m.hold {
			return r.wait()
		}
	}

	if r.m.fail && resumed == 0 {
		if r.m.resumable {
			c.s.markResumable(c.id, t.ID)
		}
		return r.finish(&agent.End{
			Outcome:   agent.OutcomeError,
			ErrorType: "script",
			Message:   "scripted failure",
			Resumable: r.m.resumable,
			Point:     r.point,
		})
	}
	in, out := len(t.HostContext)+len(t.Text), len(answer)
	usage := &agent.Usage{
		InputTokens:  in,
		OutputTokens: out,
		Model:        r.model(),
		// A made-up price (3 and 15 dollars a million tokens), so a
		// client's cost display has a number to show.
		Cost: &agent.Cost{Amount: float64(3*in+15*out) / 1e6, Currency: "USD"},
	}
	if !c.emit(agent.Event{Kind: agent.EventUsage, TurnID: t.ID, Usage: usage}) {
		return errClosed
	}
	return r.finish(&agent.End{Outcome: agent.OutcomeComplete, Point: r.point})
}

// answerAfterStop is a [stubborn] turn going on after a stop: it takes
// SlowDelay×3 to come round, then answers the tool call it was stopped in
// and says one more delta.
func (r *turnRun) answerAfterStop() error {
	c, t := r.c, r.a.turn
	if d := 3 * c.s.opts.SlowDelay; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-c.done:
			timer.Stop()
			return errClosed
		}
	}
	if call := r.openTool; call != nil {
		done := *call
		done.Success = true
		done.Output = t.Text
		done.PastTense = "Echoed " + t.Text
		r.openTool = nil
		if !c.emit(agent.Event{Kind: agent.EventToolDone, TurnID: t.ID, ToolCall: &done}) {
			return errClosed
		}
	}
	return r.text(" (after the stop)")
}

func (r *turnRun) model() string {
	if r.a.turn.Model != "" {
		return r.a.turn.Model
	}
	return r.c.model
}

// toolCall reports the turn's one tool call, waiting for Confirm when it
// needs confirmation.
func (r *turnRun) toolCall() error {
	c, t := r.c, r.a.turn
	call := agent.ToolCall{ID: r.ids + "-tool-1", Name: "echo", DisplayName: "Echo"}
	r.last = agent.EventToolStart
	start := call
	if !c.emit(agent.Event{Kind: agent.EventToolStart, TurnID: t.ID, ToolCall: &start}) {
		return errClosed
	}
	// A map of strings always marshals.
	input, _ := json.Marshal(map[string]string{"text": t.Text})
	for _, piece := range split(string(input), 2) {
		if !c.emit(agent.Event{Kind: agent.EventToolInput, TurnID: t.ID, Text: piece}) {
			return errClosed
		}
	}
	call.Input = string(input)
	call.Invocation = "echo " + t.Text
	call.NeedsConfirmation = r.m.confirm
	if r.m.confirm {
		// Set before ToolReady goes out, so a Confirm that answers it finds it.
		c.mu.Lock()
		r.a.waitingTool = call.ID
		c.mu.Unlock()
	}
	ready := call
	r.openTool = &call
	if !c.emit(agent.Event{Kind: agent.EventToolReady, TurnID: t.ID, ToolCall: &ready}) {
		return errClosed
	}
	done := call
	done.Success = true
	if r.m.confirm {
		select {
		case approved := <-r.a.confirm:
			done.Success = approved
		case <-r.a.stop:
			return errStopped
		case <-c.done:
			return errClosed
		}
	}
	if done.Success {
		done.Output = t.Text
		done.PastTense = "Echoed " + t.Text
	} else {
		done.Error = "denied"
	}
	r.openTool = nil
	if !c.emit(agent.Event{Kind: agent.EventToolDone, TurnID: t.ID, ToolCall: &done}) {
		return errClosed
	}
	return nil
}

// between is what happens before delta i of a stream: a pause after the
// first, then a step.
func (r *turnRun) between(i int, delay time.Duration) error {
	if i > 0 {
		if err := r.pause(delay); err != nil {
			return err
		}
	}
	return r.step()
}

// step is a point where the turn checks for a stop and reads the steering
// it was handed: each message is reported consumed and shows in the answer.
func (r *turnRun) step() error {
	if err := r.check(); err != nil {
		return err
	}
	if r.m.deaf {
		return nil
	}
	r.c.mu.Lock()
	taken := r.a.steering
	r.a.steering = nil
	r.c.mu.Unlock()
	for _, s := range taken {
		if !r.c.emit(agent.Event{Kind: agent.EventSteeringConsumed, TurnID: r.a.turn.ID, SteeringID: s.ID}) {
			return errClosed
		}
		if err := r.text("[steered: " + s.Text + "]"); err != nil {
			return err
		}
	}
	return nil
}

// check reports a stop or a close without waiting.
func (r *turnRun) check() error {
	select {
	case <-r.c.done:
		return errClosed
	case <-r.a.stop:
		return errStopped
	default:
		return nil
	}
}

// pause waits d, or until a stop or a close.
func (r *turnRun) pause(d time.Duration) error {
	if d <= 0 {
		return r.check()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return r.check()
	case <-r.a.stop:
		return errStopped
	case <-r.c.done:
		return errClosed
	}
}

// wait holds the turn until a stop or a close.
func (r *turnRun) wait() error {
	select {
	case <-r.a.stop:
		return errStopped
	case <-r.c.done:
		return errClosed
	}
}

// text reports a markdown delta.
func (r *turnRun) text(s string) error {
	ev := agent.Event{Kind: agent.EventText, TurnID: r.a.turn.ID, Text: s}
	if r.last != agent.EventText {
		r.markdownParts++
		ev.PartID = fmt.Sprintf("%s-md-%d", r.ids, r.markdownParts)
		r.last = agent.EventText
	}
	if !r.c.emit(ev) {
		return errClosed
	}
	return nil
}

// reasoning reports a reasoning delta.
func (r *turnRun) reasoning(s string) error {
	ev := agent.Event{Kind: agent.EventReasoning, TurnID: r.a.turn.ID, Text: s}
	if r.last != agent.EventReasoning {
		r.reasoningParts++
		ev.PartID = fmt.Sprintf("%s-think-%d", r.ids, r.reasoningParts)
		r.last = agent.EventReasoning
	}
	if !r.c.emit(ev) {
		return errClosed
	}
	return nil
}

// exit is the conversation's process dying: the loop reports it and returns,
// closing Events. The host ends the open turns.
func (r *turnRun) exit() error {
	c := r.c
	c.mu.Lock()
	c.exited = true
	c.active = nil
	c.mu.Unlock()
	c.logger.Debug("process exited", "turn", r.a.turn.ID)
	c.emit(agent.Event{
		Kind:   agent.EventExited,
		TurnID: r.a.turn.ID,
		Err:    fmt.Errorf("script conversation %s: process exited ([exit] in turn %s)", c.id, r.a.turn.ID),
	})
	return errExited
}

// finish ends the turn: the steering it holds unread goes back to the host,
// then the end is reported. The turn stops being active first, so whatever
// the host does on the end finds nothing running.
func (r *turnRun) finish(end *agent.End) error {
	c := r.c
	c.mu.Lock()
	left := r.a.steering
	r.a.steering = nil
	r.a.waitingTool = ""
	c.active = nil
	c.mu.Unlock()
	if r.m.late {
		// Handed back only after the end (settleLate).
		c.late = append(c.late, left...)
		left = nil
	}
	for _, s := range left {
		if !c.emit(agent.Event{Kind: agent.EventSteeringReturned, TurnID: r.a.turn.ID, SteeringID: s.ID}) {
			return errClosed
		}
	}
	c.logger.Debug("turn ended", "turn", r.a.turn.ID, "outcome", end.Outcome, "point", end.Point)
	if !c.emit(agent.Event{Kind: agent.EventTurnEnd, TurnID: r.a.turn.ID, End: end}) {
		return errClosed
	}
	return nil
}

// split cuts s into n pieces of nearly equal rune counts (fewer when s has
// fewer runes); the pieces joined are s.
func split(s string, n int) []string {
	runes := []rune(s)
	if n > len(runes) {
		n = len(runes)
	}
	if n <= 1 {
		return []string{s}
	}
	out := make([]string, 0, n)
	for i := range n {
		from, to := i*len(runes)/n, (i+1)*len(runes)/n
		out = append(out, string(runes[from:to]))
	}
	return out
}

var _ agent.Conversation = (*conversation)(nil)
