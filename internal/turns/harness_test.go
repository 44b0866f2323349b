package turns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
)

// The table tests drive an Engine through a recording Host: every effect
// (an action told, a refusal, a prompt sent, a steering message handed, a
// stop) is one line of the log, in the order it happened. A case is a
// script of inputs and the lines that must (want, in order) or must not
// (none) follow the last mark.

// harness is the recording Host and the backends it opens.
type harness struct {
	t     *testing.T
	e     *Engine
	log   []string
	told  []ahp.Action
	now   time.Time
	ids   int
	agent *fakeConv
	shell *fakeConv
	// caps are the agent's; hasAgent false: no agent configured.
	caps     agent.Capabilities
	hasAgent bool
	openErr  error
	pinErr   error
	hostCtx  string
	sent     []agent.Turn
	admitted []Start
	points   map[string]string
	// older are the turns the host keeps beyond the engine's state
	// (Window.Trim).
	older map[string]bool
}

// fakeConv is a backend conversation that writes what it is asked into the
// harness's log and answers as the case set it up.
type fakeConv struct {
	h    *harness
	name string
	// steer answers a steering message handed for a turn; default taken.
	steer    map[string]agent.SteerResult
	withdraw bool
	sendErr  error
}

func (f *fakeConv) Send(_ context.Context, t agent.Turn) error {
	if f.sendErr != nil {
		return f.sendErr
	}
	f.h.sent = append(f.h.sent, t)
	f.h.note("send %s %s %s", f.name, t.ID, t.Text)
	return nil
}

func (f *fakeConv) Steer(s agent.Steering) agent.SteerResult {
	r, ok := f.steer[s.TurnID]
	if !ok {
		r = agent.SteerTaken
	}
	f.h.note("steer %s -> %s %s", s.ID, s.TurnID, r)
	return r
}

func (f *fakeConv) Withdraw(id string) bool {
	f.h.note("withdraw %s %v", id, f.withdraw)
	return f.withdraw
}

func (f *fakeConv) Confirm(turnID, toolCallID string, approved bool) error {
	f.h.note("confirm %s %s %v", turnID, toolCallID, approved)
	return nil
}

func (f *fakeConv) InputAnswered(turnID, requestID string, a agent.InputAnswer) error {
	f.h.note("answered %s %s %s %v", turnID, requestID, a.Response, a.Values)
	return nil
}

func (f *fakeConv) Stop(context.Context) error { f.h.note("stop %s", f.name); return nil }
func (f *fakeConv) Events() <-chan agent.Event { return nil }
func (f *fakeConv) Close() error               { f.h.note("close %s", f.name); return nil }

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, caps agent.Capabilities, st ahp.ChatState) *harness {
	h := &harness{t: t, now: t0, caps: caps, hasAgent: true, points: map[string]string{}, older: map[string]bool{}}
	h.agent = &fakeConv{h: h, name: "agent", steer: map[string]agent.SteerResult{}, withdraw: true}
	h.shell = &fakeConv{h: h, name: "local", steer: map[string]agent.SteerResult{}}
	h.e = New(h, st, Options{HasAgent: true, Caps: caps})
	return h
}

func (h *harness) note(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

// Tell checks the action is already in the state (C-TURN-123: the state a
// snapshot is taken from holds every action told before it), then logs it.
func (h *harness) Tell(a ahp.Action, origin *ahp.ActionOrigin) {
	h.told = append(h.told, a)
	st := h.e.State()
	reduced := true
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		// A repeat of a turn older than the state's is told unreduced.
		reduced = st.ActiveTurn != nil && st.ActiveTurn.ID == a.TurnID || h.older[a.TurnID]
	case ahp.ChatTurnComplete, ahp.ChatTurnCancelled, ahp.ChatError:
		id := endedID(a)
		reduced = st.ActiveTurn == nil || st.ActiveTurn.ID != id
	case ahp.ChatPendingMessageSet:
		reduced = a.Kind == ahp.PendingSteering && st.SteeringMessage != nil && st.SteeringMessage.ID == a.ID ||
			slices.ContainsFunc(st.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == a.ID })
	}
	if !reduced {
		h.t.Errorf("C-TURN-123: %s told before it was reduced into the state", describe(a))
	}
	h.note("tell %s%s", describe(a), by(origin))
}

func (h *harness) Refuse(_ From, origin *ahp.ActionOrigin, a ahp.Action, reason string) {
	h.note("refuse %s%s: %s", describe(a), by(origin), reason)
}

func (h *harness) Prepare(m ahp.Message, extra any) (ahp.Message, []agent.Attachment, error) {
	h.note("prepare %s", m.Text)
	return m, nil, h.pinErr
}

func (h *harness) Open(r Route) (agent.Conversation, agent.Capabilities, error) {
	h.note("open %s", r)
	if r == RouteLocal {
		return h.shell, agent.Capabilities{OneTurnAtATime: true, FailureGoesOn: true}, nil
	}
	if h.openErr != nil {
		return nil, agent.Capabilities{}, h.openErr
	}
	return h.agent, h.caps, nil
}

func (h *harness) HostContext() string {
	s := h.hostCtx
	h.hostCtx = ""
	return s
}

func (h *harness) Admitted(s Start) {
	h.admitted = append(h.admitted, s)
	h.note("admitted %s", s.TurnID)
}
func (h *harness) Sent(string, Route)     {}
func (h *harness) Point(id, point string) { h.points[id] = point; h.note("point %s %s", id, point) }
func (h *harness) Ended(id string, o agent.Outcome) {
	h.note("ended %s %s", id, o)
}
func (h *harness) WaitingChanged()                               {}
func (h *harness) OlderTurn(id string) bool                      { return h.older[id] }
func (h *harness) SpawnedContent(string) []ahp.ToolResultContent { return nil }
func (h *harness) Warn(msg string, args ...any)                  { h.note("warn %s", msg) }
func (h *harness) Now() time.Time                                { return h.now }
func (h *harness) NewID() string                                 { h.ids++; return fmt.Sprintf("n%d", h.ids) }

func by(o *ahp.ActionOrigin) string {
	if o == nil {
		return ""
	}
	return " by " + o.ClientID
}

// describe is an action as one log word and its ids.
func describe(a ahp.Action) string {
	typ := strings.TrimPrefix(a.ActionType(), "chat/")
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		s := typ + " " + a.TurnID
		if a.QueuedMessageID != "" {
			s += " q=" + a.QueuedMessageID
		}
		return s
	case ahp.ChatTurnComplete:
		return typ + " " + a.TurnID
	case ahp.ChatTurnCancelled:
		return typ + " " + a.TurnID
	case ahp.ChatError:
		s := typ + " " + a.TurnID
		if a.Part.IsResumableError() {
			s += " resumable"
		}
		return s
	case ahp.ChatTurnResume:
		return typ + " " + a.TurnID
	case ahp.ChatPendingMessageSet:
		return typ + " " + a.Kind + " " + a.ID
	case ahp.ChatPendingMessageRemoved:
		return typ + " " + a.Kind + " " + a.ID
	case ahp.ChatResponsePart:
		return typ + " " + a.TurnID
	case ahp.ChatDelta:
		return typ + " " + a.TurnID + " " + a.Content
	case ahp.ChatToolCallStart:
		return typ + " " + a.TurnID + " " + a.ToolCallID
	case ahp.ChatToolCallReady:
		return typ + " " + a.TurnID + " " + a.ToolCallID
	case ahp.ChatToolCallComplete:
		return typ + " " + a.TurnID + " " + a.ToolCallID
	case ahp.ChatToolCallConfirmed:
		return typ + " " + a.TurnID + " " + a.ToolCallID
	}
	return typ
}

// ── inputs ──────────────────────────────────────────────────────────────

type step func(h *harness)

const alice = "user:alice"

func as(client, sender string, a ahp.Action) step {
	return func(h *harness) {
		h.e.Client(From{Client: client, Sender: sender}, &ahp.ActionOrigin{ClientID: client, ClientSeq: 1}, a)
	}
}

// client is a client c1, signed in as alice, dispatching a.
func client(a ahp.Action) step { return as("c1", alice, a) }

func msg(text string) ahp.Message {
	return ahp.Message{Text: text, Origin: ahp.MessageOrigin{Kind: "user"}}
}

func start(id, text string) step {
	return func(h *harness) {
		client(ahp.ChatTurnStarted{TurnID: id, StartedAt: ISOTime(h.now), Message: msg(text)})(h)
	}
}
func queue(id, text string) step {
	return client(ahp.ChatPendingMessageSet{Kind: ahp.PendingQueued, ID: id, Message: msg(text)})
}
func steer(id, text string) step {
	return client(ahp.ChatPendingMessageSet{Kind: ahp.PendingSteering, ID: id, Message: msg(text)})
}
func takeBack(kind, id string) step {
	return client(ahp.ChatPendingMessageRemoved{Kind: kind, ID: id})
}
func stop(id string) step   { return client(ahp.ChatTurnCancelled{TurnID: id}) }
func resume(id string) step { return client(ahp.ChatTurnResume{TurnID: id}) }
func reorder(ids ...string) step {
	return client(ahp.ChatQueuedMessagesReordered{Order: ids})
}

func on(conv func(h *harness) *fakeConv, ev agent.Event) step {
	return func(h *harness) { h.e.Event(conv(h), ev) }
}
func agentConv(h *harness) *fakeConv { return h.agent }
func shellConv(h *harness) *fakeConv { return h.shell }

func say(turn, text string) step {
	return on(agentConv, agent.Event{Kind: agent.EventText, TurnID: turn, Text: text})
}
func tool(turn, id string) step {
	return on(agentConv, agent.Event{Kind: agent.EventToolReady, TurnID: turn, ToolCall: &agent.ToolCall{ID: id, Name: "Bash", NeedsConfirmation: true}})
}
func toolDone(turn, id string) step {
	return on(agentConv, agent.Event{Kind: agent.EventToolDone, TurnID: turn, ToolCall: &agent.ToolCall{ID: id, Success: true, Output: "ok"}})
}
func ended(turn string, end agent.End) step {
	return on(agentConv, agent.Event{Kind: agent.EventTurnEnd, TurnID: turn, End: &end})
}
func done(turn string) step { return ended(turn, agent.End{Outcome: agent.OutcomeComplete}) }
func fail(turn string) step {
	return ended(turn, agent.End{Outcome: agent.OutcomeError, ErrorType: "boom", Message: "it broke"})
}
func failResumable(turn string) step {
	return ended(turn, agent.End{Outcome: agent.OutcomeError, ErrorType: "overloaded", Message: "try again", Resumable: true})
}
func cancelled(turn string) step {
	return ended(turn, agent.End{Outcome: agent.OutcomeCancelled})
}
func consumed(id string) step {
	return on(agentConv, agent.Event{Kind: agent.EventSteeringConsumed, SteeringID: id})
}
func returned(turn, id string) step {
	return on(agentConv, agent.Event{Kind: agent.EventSteeringReturned, TurnID: turn, SteeringID: id})
}
func ownTurn(turn, steering string) step {
	return on(agentConv, agent.Event{Kind: agent.EventTurnStarted, TurnID: turn, SteeringID: steering})
}
func shellDone(turn string, exit int) step {
	outcome := agent.OutcomeComplete
	if exit != 0 {
		outcome = agent.OutcomeError
	}
	return on(shellConv, agent.Event{Kind: agent.EventTurnEnd, TurnID: turn, End: &agent.End{Outcome: outcome, ExitCode: &exit}})
}
func later(d time.Duration) step { return func(h *harness) { h.now = h.now.Add(d) } }

// steerAnswer makes the agent answer a steering message handed for turn.
func steerAnswer(turn string, r agent.SteerResult) step {
	return func(h *harness) { h.agent.steer[turn] = r }
}

// mark starts the part of the log a case's want and none look at.
func mark(h *harness) { h.log = nil; h.told = nil }

// ── cases ───────────────────────────────────────────────────────────────

// rule is one table case: the rule it proves, what it checks, the
// backend's capabilities, the script, and what must and must not follow
// the last mark.
type rule struct {
	id    string
	what  string
	caps  *agent.Capabilities
	state *ahp.ChatState
	steps []step
	want  []string
	none  []string
	check func(t *testing.T, h *harness)
}

var (
	capsFull     = agent.Capabilities{OneTurnAtATime: true, Steering: true, Withdraw: true, Resume: true}
	capsNoSteer  = agent.Capabilities{OneTurnAtATime: true, Resume: true}
	capsNoWd     = agent.Capabilities{OneTurnAtATime: true, Steering: true, Resume: true}
	capsParallel = agent.Capabilities{Steering: true, Withdraw: true}
)

func runRules(t *testing.T, rules []rule) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.id, func(t *testing.T) {
			caps := capsFull
			if r.caps != nil {
				caps = *r.caps
			}
			st := ahp.ChatState{Resource: "ahp-chat:/c", Title: "t"}
			if r.state != nil {
				st = *r.state
			}
			h := newHarness(t, caps, st)
			for _, s := range r.steps {
				s(h)
			}
			if !subsequence(h.log, r.want) {
				t.Errorf("%s: %s\nwant in order:\n  %s\nlog:\n  %s", r.id, r.what, strings.Join(r.want, "\n  "), strings.Join(h.log, "\n  "))
			}
			for _, n := range r.none {
				if slices.ContainsFunc(h.log, func(l string) bool { return strings.HasPrefix(l, n) }) {
					t.Errorf("%s: %s\nlog has %q:\n  %s", r.id, r.what, n, strings.Join(h.log, "\n  "))
				}
			}
			if r.check != nil {
				r.check(t, h)
			}
		})
	}
}

// subsequence reports whether every want line starts a log line, in order.
func subsequence(log, want []string) bool {
	i := 0
	for _, l := range log {
		if i < len(want) && strings.HasPrefix(l, want[i]) {
			i++
		}
	}
	return i == len(want)
}

// lastTold is the last action of type T told since the mark.
func lastTold[T ahp.Action](h *harness) (T, bool) {
	var zero T
	for i := len(h.told) - 1; i >= 0; i-- {
		if a, ok := h.told[i].(T); ok {
			return a, true
		}
	}
	return zero, false
}

func endedID(a ahp.Action) string {
	switch a := a.(type) {
	case ahp.ChatTurnComplete:
		return a.TurnID
	case ahp.ChatTurnCancelled:
		return a.TurnID
	case ahp.ChatError:
		return a.TurnID
	}
	return ""
}
