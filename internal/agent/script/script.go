// Package script is ahpd's built-in agent: it needs nothing installed and
// answers every turn deterministically ("echo: <text>"), streamed as several
// deltas. Markers in a turn's text make it do what a test needs: reason, call
// a tool, wait for a confirmation, stream slowly, hold until stopped, fail,
// prepare its prompt for a while, or die. It is what `ahpd serve` offers out
// of the box and what most of the daemon's tests drive, through the
// agent.Conversation contract only.
//
// Markers, anywhere in Turn.Text and combinable:
//
//	[think]            reasoning deltas before the answer
//	[tool]             one tool call ("<turnID>-tool-1", echo) before the answer
//	[confirm]          that tool call needs confirmation; the turn waits for Confirm
//	[slow]             the answer in many deltas, SlowDelay apart
//	[hold]             one delta of the answer, then wait until Stop or Close
//	[error]            the turn ends with an error after its answer
//	[error:resumable]  the same, resumable: a resumed send of the turn completes
//	[prep]             the turn prepares its prompt for SlowDelay×3 first
//	[exit]             the conversation's process dies after one delta
//	[deaf]             the turn takes steering but never reads it (returned at its end)
//	[late]             like [deaf], but the unread steering goes back only after the
//	                   turn's end: when the next turn is sent, or LateDelay after the end
//	[stuck-close]      the conversation's Close takes CloseDelay (a process slow to
//	                   end, for tests of what waits on an unloading chat)
//	[stubborn]         a stop does not cut the turn short at once: SlowDelay×3 later it
//	                   still answers its tool call and says one more delta, then ends
//	                   cancelled (as Claude's CLI answers the call it was interrupted in)
//	[worker...]        a "Task" call spawning a worker conversation (subagent):
//	                   [worker], [worker:hold], [worker:confirm], [worker:nested],
//	                   [worker:bg]; a later turn saying [release] ends a background
//	                   worker (worker.go)
//	[ask]              an input request "Pick a colour" (red, blue); the turn waits for
//	                   InputAnswered and answers "You picked <option>" (ask.go)
//
// A steering message whose text holds [refuse] is refused.
//
// Conversations are kept in memory in the *Script value, so resume, fork,
// rewind and delete work within one process.
package script

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// Options configure a Script. The zero value is a usable default.
type Options struct {
	// Provider is the backend's provider id; default "script".
	Provider string
	// DisplayName is shown in the root state's agents list; default "Script".
	DisplayName string
	// Caps are the declared capabilities. The zero value means the defaults
	// (see DefaultCapabilities) unless ExactCaps is set.
	Caps agent.Capabilities
	// ExactCaps makes Caps be used as given even when it is the zero value,
	// for tests of a backend that declares nothing.
	ExactCaps bool
	// DeltaDelay is the pause between the streamed deltas of a normal
	// answer; default 0 (as fast as possible, still several deltas).
	DeltaDelay time.Duration
	// SlowDelay is the pause between the deltas of a [slow] answer, and a
	// third of how long a [prep] turn prepares; default 50ms, negative
	// means no pause.
	SlowDelay time.Duration
	// CloseDelay is how long Close takes in a conversation that ran a
	// [stuck-close] turn; default 0.
	CloseDelay time.Duration
	// OnClose, when set, is called with the conversation's id as its Close
	// begins, so a test can wait for a chat to start unloading.
	OnClose func(conversationID string)
	// LateDelay is how long a [late] turn's unread steering waits after the
	// turn's end before it goes back when no next turn is sent; default 1s.
	LateDelay time.Duration
	// Models are the models it offers, the default first; default one,
	// "script". A turn's usage names the session's model.
	Models []agent.Model
	// Config are the settings it declares (agent.Info.Config), for tests
	// of a client that shows a session's settings; default none.
	Config []agent.ConfigProperty
	// Clock is accepted for symmetry with the other backends; the script
	// agent's answers never depend on the time, so it is not read.
	Clock func() time.Time
}

// DefaultCapabilities are what a Script declares when Options.Caps is zero:
// everything but subagents.
func DefaultCapabilities() agent.Capabilities {
	return agent.Capabilities{
		Steering:       true,
		Withdraw:       true,
		OneTurnAtATime: true,
		Fork:           true,
		Rewind:         true,
		Delete:         true,
		Resume:         true,
		SideChat:       true,
	}
}

// Script is the built-in backend. Build it with New; it has no side effects
// until Open.
type Script struct {
	opts Options

	// mu guards convs, prompts, resumable, sent, steers and opens.
	mu sync.Mutex
	// convs holds every kept conversation by ConversationID.
	convs map[string]*record
	// prompts holds every turn handed to Send, by ConversationID. It is a
	// log for tests and outlives Delete.
	prompts map[string][]agent.Turn
	// resumable holds the turns (by resumableKey) that ended with a
	// resumable error and have not been resumed yet; a turn sent again
	// under one of them completes.
	resumable map[string]bool
	// resumes counts the resumes of each turn (by resumableKey).
	resumes map[string]int
	// promptOrder is the conversations of prompts, oldest first, so the
	// oldest goes once logMax are held.
	promptOrder []string
	// sent, steers and opens are logs for tests, over every conversation:
	// each turn handed to Send, each Steer call with its answer, and each
	// Open that succeeded, in order; the last logMax to 2×logMax of each.
	sent   []agent.Turn
	steers []SteerRecord
	opens  []OpenRecord
}

// SteerRecord is one Steer call and what it answered.
type SteerRecord struct {
	Conversation string
	Steering     agent.Steering
	Result       agent.SteerResult
}

// OpenRecord is one conversation opened.
type OpenRecord struct {
	Conversation string
	Mode         agent.OpenMode
	// HostTools is the host's tools endpoint the conversation was handed.
	HostTools *agent.HostTools
}

// record is one kept conversation: the turns it has seen, in order. The
// point of turn n (1-based) is "<conversationID>#<n>". A real backend keeps
// its history in its own process or files; this one keeps only the newest
// historyKept to 2×historyKept turns in memory (and the first one's text,
// its title), and counts the rest, so a long conversation costs a bounded
// amount of the daemon's heap (issue #34).
type record struct {
	// dropped is how many turns came before turns[0].
	dropped int
	turns   []entry
	// first is the text of the conversation's first turn.
	first string
}

// historyKept bounds the turns a kept conversation holds in memory.
const historyKept = 64

// promptsKept bounds the prompts the test log keeps per conversation (a
// whole agent.Prompt each, with its host context).
const promptsKept = 16

// count is how many turns the conversation has seen.
func (r *record) count() int { return r.dropped + len(r.turns) }

// add appends a turn, dropping the oldest past 2×historyKept.
func (r *record) add(e entry) {
	if r.count() == 0 {
		r.first = e.text
	}
	r.turns = append(r.turns, e)
	if len(r.turns) >= 2*historyKept {
		n := len(r.turns) - historyKept
		r.turns = append([]entry(nil), r.turns[n:]...)
		r.dropped += n
	}
}

// upTo is the conversation's first n turns, as far as it keeps them.
func (r *record) upTo(n int) *record {
	keep := min(max(n-r.dropped, 0), len(r.turns))
	return &record{dropped: n - keep, turns: append([]entry(nil), r.turns[:keep]...), first: r.first}
}

type entry struct {
	turnID string
	text   string
}

// New returns a Script with o's defaults filled in.
func New(o Options) *Script {
	if o.Provider == "" {
		o.Provider = "script"
	}
	if o.DisplayName == "" {
		o.DisplayName = "Script"
	}
	if len(o.Models) == 0 {
		o.Models = []agent.Model{{ID: "script", Name: "Script"}}
	}
	if !o.ExactCaps && o.Caps == (agent.Capabilities{}) {
		o.Caps = DefaultCapabilities()
	}
	switch {
	case o.SlowDelay == 0:
		o.SlowDelay = 50 * time.Millisecond
	case o.SlowDelay < 0:
		o.SlowDelay = 0
	}
	if o.DeltaDelay < 0 {
		o.DeltaDelay = 0
	}
	if o.LateDelay <= 0 {
		o.LateDelay = time.Second
	}
	return &Script{
		opts:      o,
		convs:     make(map[string]*record),
		prompts:   make(map[string][]agent.Turn),
		resumable: make(map[string]bool),
		resumes:   make(map[string]int),
	}
}

// Provider returns the provider id.
func (s *Script) Provider() string { return s.opts.Provider }

// Info describes the backend; it is always available.
func (s *Script) Info(ctx context.Context) agent.Info {
	return agent.Info{
		Provider:    s.opts.Provider,
		DisplayName: s.opts.DisplayName,
		Description: "Built-in scripted agent: deterministic echo answers, driven by markers in the prompt",
		Models:      slices.Clone(s.opts.Models),
		Config:      slices.Clone(s.opts.Config),
		Commands: []agent.Command{
			{Name: "help", Description: "Say which markers the script agent reads"},
			{Name: "hold", Description: "Answer once, then wait for a stop"},
		},
	}
}

// Capabilities returns the declared capabilities.
func (s *Script) Capabilities() agent.Capabilities { return s.opts.Caps }

// Open opens a conversation. OpenNew starts ConversationID empty (forgetting
// what it held); OpenResume keeps what it holds, or starts empty when it is
// unknown (the daemon may have restarted); OpenFork copies Source's turns
// through Point; OpenRewind cuts ConversationID back to Point. A point is
// "<id>#<n>", and n counts turns from the conversation's start, so a point a
// fork copied names the same turn in the copy.
func (s *Script) Open(ctx context.Context, p agent.OpenParams) (agent.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s conversation %s: %w", p.Mode, p.ConversationID, err)
	}
	if p.ConversationID == "" {
		return nil, fmt.Errorf("open %s conversation: empty conversation id", p.Mode)
	}
	if err := s.prepare(p); err != nil {
		return nil, fmt.Errorf("open %s conversation %s: %w", p.Mode, p.ConversationID, err)
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	model := p.Model
	if model == "" {
		model = "script"
	}
	c := newConversation(s, p.ConversationID, model, logger.With("agent", s.opts.Provider, "conversation", p.ConversationID))
	s.mu.Lock()
	s.opens = keepLast(s.opens, OpenRecord{Conversation: p.ConversationID, Mode: p.Mode, HostTools: p.HostTools})
	s.mu.Unlock()
	go c.loop()
	return c, nil
}

// prepare sets up the kept conversation p opens.
func (s *Script) prepare(p agent.OpenParams) error {
	caps := s.opts.Caps
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p.Mode {
	case agent.OpenNew:
		s.convs[p.ConversationID] = &record{}
	case agent.OpenResume:
		if !caps.Resume {
			return errors.New("backend cannot resume")
		}
		if s.convs[p.ConversationID] == nil {
			s.convs[p.ConversationID] = &record{}
		}
	case agent.OpenFork:
		if !caps.Fork {
			return errors.New("backend cannot fork")
		}
		src := s.convs[p.Source]
		if src == nil {
			return fmt.Errorf("fork source %q: unknown conversation", p.Source)
		}
		n, err := parsePoint(p.Point, src.count())
		if err != nil {
			return fmt.Errorf("fork source %q: %w", p.Source, err)
		}
		s.convs[p.ConversationID] = src.upTo(n)
	case agent.OpenRewind:
		if !caps.Rewind {
			return errors.New("backend cannot rewind")
		}
		rec := s.convs[p.ConversationID]
		if rec == nil {
			return errors.New("rewind: unknown conversation")
		}
		n, err := parsePoint(p.Point, rec.count())
		if err != nil {
			return fmt.Errorf("rewind: %w", err)
		}
		*rec = *rec.upTo(n)
	default:
		return fmt.Errorf("unknown open mode %d", int(p.Mode))
	}
	return nil
}

// parsePoint returns the turn count a point names in a conversation holding
// have turns.
func parsePoint(point string, have int) (int, error) {
	i := strings.LastIndexByte(point, '#')
	if i <= 0 {
		return 0, fmt.Errorf("point %q: want <conversation>#<n>", point)
	}
	n, err := strconv.Atoi(point[i+1:])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("point %q: want <conversation>#<n>", point)
	}
	if n > have {
		return 0, fmt.Errorf("point %q: the conversation holds %d turns", point, have)
	}
	return n, nil
}

// Delete forgets a kept conversation; an unknown one is an error.
func (s *Script) Delete(ctx context.Context, conversationID string, directories []string) error {
	if !s.opts.Caps.Delete {
		return fmt.Errorf("delete conversation %s: backend cannot delete", conversationID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.convs[conversationID] == nil {
		return fmt.Errorf("delete conversation %s: unknown conversation", conversationID)
	}
	delete(s.convs, conversationID)
	return nil
}

// History returns the texts of the turns conversationID holds, in order, as
// far as it keeps them (the newest historyKept at least); nil for an
// unknown conversation.
func (s *Script) History(conversationID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.convs[conversationID]
	if rec == nil {
		return nil
	}
	out := make([]string, len(rec.turns))
	for i, e := range rec.turns {
		out[i] = e.text
	}
	return out
}

// Prompts returns every turn handed to Send on conversationID, held or
// rejected-later ones included, HostContext and all, in the order sent: the
// newest promptsKept at least.
func (s *Script) Prompts(conversationID string) []agent.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Turn(nil), s.prompts[conversationID]...)
}

// Sent returns every turn handed to Send on any conversation, in order.
func (s *Script) Sent() []agent.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Turn(nil), s.sent...)
}

// Steers returns every Steer call on any conversation with its answer, in
// order.
func (s *Script) Steers() []SteerRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SteerRecord(nil), s.steers...)
}

// Opens returns every conversation opened, in order.
func (s *Script) Opens() []OpenRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OpenRecord(nil), s.opens...)
}

// recordPrompt logs a turn handed to Send.
func (s *Script) recordPrompt(conversationID string, t agent.Turn) {
	t.Attachments = append([]agent.Attachment(nil), t.Attachments...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.prompts[conversationID]; !ok {
		s.promptOrder = append(s.promptOrder, conversationID)
		if len(s.prompts) >= logMax {
			// The oldest conversation's prompts go.
			delete(s.prompts, s.promptOrder[0])
			s.promptOrder = s.promptOrder[1:]
		}
	}
	// One conversation's newest prompts are kept (promptsKept to twice it):
	// a hundred long conversations would otherwise hold a hundred logs of
	// 1,000 to 2,000 prompts (issue #34), and tests read only the last few.
	s.prompts[conversationID] = keepNewest(s.prompts[conversationID], t, promptsKept)
	s.sent = keepLast(s.sent, t)
}

// logMax bounds each log the script agent keeps for tests (the turns sent,
// steers, opens, and the conversations whose prompts are kept), so a
// daemon that runs it for long does not grow with every turn it ever ran.
const logMax = 1000

// keepLast appends v to log and drops the oldest entries past logMax
// (copying only once the slice holds twice that, so it is amortized).
func keepLast[T any](log []T, v T) []T { return keepNewest(log, v, logMax) }

// keepNewest appends v to log and drops the oldest entries past n, once
// the slice holds 2n.
func keepNewest[T any](log []T, v T, n int) []T {
	log = append(log, v)
	if len(log) >= 2*n {
		log = append([]T(nil), log[len(log)-n:]...)
	}
	return log
}

// recordSteer logs a Steer call.
func (s *Script) recordSteer(conversationID string, st agent.Steering, r agent.SteerResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steers = keepLast(s.steers, SteerRecord{Conversation: conversationID, Steering: st, Result: r})
}

// admit adds a turn whose prompt went out to conversationID's history and
// returns its 1-based index. A turn sent again after a resumable error keeps
// the index it had when it is still the conversation's last; resumed counts
// the resumes of the turn so far (0: not a resume).
func (s *Script) admit(conversationID string, t agent.Turn) (index, resumed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.convs[conversationID]
	if rec == nil { // deleted while open
		rec = &record{}
		s.convs[conversationID] = rec
	}
	if key := resumableKey(conversationID, t.ID); s.resumable[key] {
		delete(s.resumable, key)
		s.resumes[key]++
		resumed = s.resumes[key]
		if n := len(rec.turns); n > 0 && rec.turns[n-1].turnID == t.ID {
			return rec.count(), resumed
		}
	}
	rec.add(entry{turnID: t.ID, text: t.Text})
	return rec.count(), resumed
}

// markResumable remembers that turnID of conversationID ended with a
// resumable error.
func (s *Script) markResumable(conversationID, turnID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resumable[resumableKey(conversationID, turnID)] = true
}

// resumableKey names a turn of a conversation: turn ids are the host's and
// need not be unique across conversations.
func resumableKey(conversationID, turnID string) string {
	return conversationID + "\x00" + turnID
}

var _ agent.Agent = (*Script)(nil)
