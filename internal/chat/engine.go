package chat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/store"
	"github.com/google/uuid"
)

// Refusal texts CHATS.md quotes from VS Code's agent host.
const (
	ReasonNoSteering       = "The session provider does not support steering messages."
	ReasonSteeringBusy     = "Cannot change a steering message while it is being processed."
	reasonTurnRunning      = "A turn is already running in this chat; queue the message instead."
	reasonNoActiveTurn     = "No turn is running in this chat."
	reasonNotDispatchable  = "Action is not client-dispatchable."
	reasonReadOnly         = "This chat is read-only."
	commandPrefix          = "!"
	hostRestartedMessage   = "The host restarted while this turn was running."
	hostRestartedErrorType = "hostRestarted"
)

// runningTurn is the turn engine's record of the active turn.
type runningTurn struct {
	id      string
	started time.Time
	sender  string
	// sent: the prompt was handed to the backend (steering may be handed).
	sent bool
	// command runs the turn as a local ! command instead of the backend.
	command *commandRun
	// Part bookkeeping: the open markdown and reasoning parts, so text
	// continues the part it belongs to and starts a new one after any
	// other part.
	mdPart, rsPart string
	lastKind       string
	nextPart       int
	tools          map[string]bool
}

// steeringState tracks the chat's one steering message against the backend.
type steeringState struct {
	// handed: the backend took it (SteerTaken) and has not yet reported it
	// consumed or returned. While handed, nothing starts (C-TURN-40).
	handed bool
	id     string
}

func (c *Chat) onClientAction(cl Client, origin *ahp.ActionOrigin, a ahp.Action) {
	if !ahp.IsClientDispatchable(a.ActionType()) {
		c.refuse(cl, origin, a, reasonNotDispatchable)
		return
	}
	if grant := grantFor(a); grant != "" && !cl.can(grant) {
		c.refuse(cl, origin, a, fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), grant))
		return
	}
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		c.clientTurnStarted(cl, origin, a)
	case ahp.ChatTurnCancelled:
		c.clientStop(cl, origin, a)
	case ahp.ChatTurnResume:
		c.clientResume(cl, origin, a)
	case ahp.ChatPendingMessageSet:
		c.clientPendingSet(cl, origin, a)
	case ahp.ChatPendingMessageRemoved:
		c.clientPendingRemoved(cl, origin, a)
	case ahp.ChatQueuedMessagesReordered:
		c.apply(a, origin)
		c.startNext()
	case ahp.ChatDraftChanged:
		c.apply(a, origin)
		c.persistDraft()
	case ahp.ChatToolCallConfirmed:
		c.clientConfirm(cl, origin, a)
	case ahp.ChatIsReadChanged, ahp.ChatIsArchivedChanged:
		c.apply(a, origin)
		c.persistRecord()
	default:
		// Client tool results, input answers and the like change only the
		// chat's state.
		c.apply(a, origin)
	}
}

// grantFor names the grant a client action needs (CHATS.md "Grants").
func grantFor(a ahp.Action) string {
	switch a.(type) {
	case ahp.ChatTurnStarted, ahp.ChatPendingMessageSet, ahp.ChatQueuedMessagesReordered, ahp.ChatTurnResume:
		return "chat:send"
	case ahp.ChatTurnCancelled, ahp.ChatPendingMessageRemoved:
		return "chat:cancel"
	case ahp.ChatToolCallConfirmed, ahp.ChatInputAnswerChanged, ahp.ChatInputCompleted:
		return "chat:answer"
	case ahp.ChatToolCallComplete, ahp.ChatToolCallResultConfirmed, ahp.ChatToolCallContentChanged:
		return "chat:tool"
	case ahp.ChatDraftChanged:
		return "chat:draft"
	case ahp.ChatWorkingDirectorySet, ahp.ChatWorkingDirectoryRemoved:
		return "chat:folders"
	case ahp.ChatIsReadChanged, ahp.ChatIsArchivedChanged:
		return "chat:mark"
	case ahp.ChatTruncated:
		return "chat:truncate"
	}
	return ""
}

func (c *Chat) readOnly() bool { return c.state.Interactivity == "read-only" }

// clientTurnStarted admits a client's turn (C-TURN-01).
func (c *Chat) clientTurnStarted(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTurnStarted) {
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	if a.TurnID == "" {
		c.refuse(cl, origin, a, "chat/turnStarted needs a turnId.")
		return
	}
	if c.isKnownTurn(a.TurnID) {
		// Idempotent (AHP-1.0.md §5): said again, changes nothing, and the
		// backend is not started again.
		c.apply(a, origin)
		return
	}
	if c.state.ActiveTurn != nil {
		c.refuse(cl, origin, a, reasonTurnRunning)
		return
	}
	c.admit(a, origin, cl.Sender)
}

func (c *Chat) isKnownTurn(id string) bool {
	if c.state.ActiveTurn != nil && c.state.ActiveTurn.ID == id {
		return true
	}
	for i := range c.state.Turns {
		if c.state.Turns[i].ID == id {
			return true
		}
	}
	return false
}

// admit starts a turn: says chat/turnStarted (with the sender in the
// message's _meta), records it as running, and hands it to the backend or
// runs it as a local command.
func (c *Chat) admit(a ahp.ChatTurnStarted, origin *ahp.ActionOrigin, sender string) {
	if a.StartedAt == "" {
		a.StartedAt = isoTime(c.cfg.Now())
	}
	if sender == "" {
		sender, _ = a.Message.Meta[SenderMetaKey].(string)
	}
	if sender != "" {
		meta := make(map[string]any, len(a.Message.Meta)+1)
		for k, v := range a.Message.Meta {
			meta[k] = v
		}
		meta[SenderMetaKey] = sender
		a.Message.Meta = meta
	}
	started, err := time.Parse(time.RFC3339Nano, a.StartedAt)
	if err != nil {
		started = c.cfg.Now()
	}
	first := len(c.state.Turns) == 0
	c.apply(a, origin)
	t := &runningTurn{id: a.TurnID, started: started, sender: sender, tools: make(map[string]bool)}
	c.turn = t
	if sender != "" {
		c.senders[a.TurnID] = sender
	}
	text := a.Message.Text
	isCommand := strings.HasPrefix(text, commandPrefix) && len(strings.TrimSpace(text)) > len(commandPrefix)
	if isCommand {
		c.commands[a.TurnID] = true
	}
	c.persistStarted()
	c.autoTitle(text, first, isCommand)
	if isCommand {
		c.runCommand(t, strings.TrimSpace(strings.TrimPrefix(text, commandPrefix)))
		return
	}
	turn := agent.Turn{ID: a.TurnID, Text: text, Model: modelOf(a.Message)}
	if meta := ParseRecordMeta(c.record.Meta); meta.FirstPromptContext != "" {
		turn.HostContext = meta.FirstPromptContext
		meta.FirstPromptContext = ""
		c.record.Meta = meta.Raw()
		c.persistRecord()
	}
	c.send(t, turn)
}

func modelOf(m ahp.Message) string {
	if m.Model != nil {
		return m.Model.ID
	}
	return ""
}

// send hands a turn to the backend, opening its conversation first.
func (c *Chat) send(t *runningTurn, turn agent.Turn) {
	if err := c.ensureConversation(); err != nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "agentUnavailable", Message: err.Error()})
		return
	}
	if err := c.conv.Send(context.Background(), turn); err != nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "sendFailed", Message: err.Error()})
		return
	}
	t.sent = true
	c.handSteering()
}

// ensureConversation opens the backend conversation of this chat:
// resumed when the chat already said something to it.
func (c *Chat) ensureConversation() error {
	if c.conv != nil {
		return nil
	}
	if c.cfg.Agent == nil {
		return fmt.Errorf("agent %q is not available on this host", c.cfg.Provider)
	}
	if info := c.cfg.Agent.Info(context.Background()); info.Unavailable != "" {
		return fmt.Errorf("agent %q is unavailable: %s", c.cfg.Provider, info.Unavailable)
	}
	mode := agent.OpenNew
	if c.hasBackendTurns() && c.caps.Resume {
		mode = agent.OpenResume
	}
	if c.record.ConversationID == "" {
		c.record.ConversationID = uuid.NewString()
	}
	meta := ParseRecordMeta(c.record.Meta)
	p := agent.OpenParams{
		Mode:           mode,
		ConversationID: c.record.ConversationID,
		Directories:    c.cfg.Directories,
		Settings:       c.cfg.Settings,
		Logger:         c.log,
	}
	if po := meta.PendingOpen; po != nil {
		if c.caps.Fork && po.Point != "" {
			p.Mode, p.Source, p.Point = agent.OpenFork, po.Source, po.Point
		} else {
			// C-FROM-09: no point to resume from: a conversation of its own.
			p.Mode = agent.OpenNew
		}
	}
	conv, err := c.cfg.Agent.Open(context.Background(), p)
	if err != nil {
		return fmt.Errorf("open %s conversation: %w", c.cfg.Provider, err)
	}
	c.conv = conv
	if meta.PendingOpen != nil {
		meta.PendingOpen = nil
		c.record.Meta = meta.Raw()
		c.persistRecord()
	}
	return nil
}

// hasBackendTurns reports whether the backend has seen a turn of this chat
// (any finished turn that was not a local ! command).
func (c *Chat) hasBackendTurns() bool {
	for i := range c.state.Turns {
		if !c.commands[c.state.Turns[i].ID] {
			return true
		}
	}
	return false
}

// conversationGone handles a backend process that ended: the running turn
// ends in an error, and the next turn reopens the conversation resumed.
func (c *Chat) conversationGone(err error) {
	if c.conv != nil {
		_ = c.conv.Close()
		c.conv = nil
	}
	c.steer.handed = false
	if c.turn != nil && c.turn.command == nil {
		c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: "agentExited", Message: err.Error()})
	}
}

// endTurn ends the running turn with exactly one ending action
// (C-TURN-10..14) and starts what waits when it completed (C-TURN-26).
func (c *Chat) endTurn(end agent.End) {
	t := c.turn
	if t == nil {
		return
	}
	c.turn = nil
	dur := c.cfg.Now().Sub(t.started).Milliseconds()
	if dur < 0 {
		dur = 0
	}
	switch end.Outcome {
	case agent.OutcomeComplete:
		c.apply(ahp.ChatTurnComplete{TurnID: t.id, Duration: dur}, nil)
	case agent.OutcomeCancelled:
		c.apply(ahp.ChatTurnCancelled{TurnID: t.id, Duration: dur}, nil)
	default:
		msg := end.Message
		if msg == "" {
			msg = "The turn failed."
		}
		info := ahp.ErrorInfo{ErrorType: end.ErrorType, Message: msg}
		if end.ExitCode != nil {
			info.Meta = map[string]any{"exitCode": *end.ExitCode}
		}
		c.apply(ahp.ChatError{TurnID: t.id, Duration: dur, Part: ahp.ErrorPart(info, end.Resumable)}, nil)
	}
	if end.Point != "" {
		c.points[t.id] = end.Point
	}
	c.persistEnded(t.id)
	if end.Outcome == agent.OutcomeComplete {
		c.startNext()
	}
}

// endTurnRecovered ends a turn left running by a process that died.
func (c *Chat) endTurnRecovered(r *store.TurnRecord) {
	if c.state.ActiveTurn == nil {
		return
	}
	started, err := time.Parse(time.RFC3339Nano, c.state.ActiveTurn.StartedAt)
	if err != nil {
		started = r.StartedAt
	}
	c.turn = &runningTurn{id: c.state.ActiveTurn.ID, started: started, sender: r.Sender}
	c.endTurn(agent.End{Outcome: agent.OutcomeError, ErrorType: hostRestartedErrorType, Message: hostRestartedMessage})
}

// clientStop handles chat/turnCancelled from a client: the stop is said,
// then every pending steering message is taken out (C-TURN-52, 53), then
// the backend is told. A stop starts nothing (C-TURN-54).
func (c *Chat) clientStop(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTurnCancelled) {
	t := c.turn
	if t == nil || c.state.ActiveTurn == nil || a.TurnID != t.id {
		c.refuse(cl, origin, a, reasonNoActiveTurn)
		return
	}
	if a.Duration <= 0 {
		a.Duration = max(0, c.cfg.Now().Sub(t.started).Milliseconds())
	}
	c.turn = nil
	c.apply(a, origin)
	c.persistEnded(t.id)
	if s := c.state.SteeringMessage; s != nil {
		c.apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: s.ID}, nil)
	}
	c.steer = steeringState{}
	if t.command != nil {
		t.command.kill()
		return
	}
	if c.conv != nil {
		if err := c.conv.Stop(context.Background()); err != nil {
			c.log.Warn("stop agent turn", "turn", t.id, "err", err)
		}
	}
}

// clientResume reopens the latest turn when it failed resumably
// (AHP-1.0.md §3) and sends it again.
func (c *Chat) clientResume(cl Client, origin *ahp.ActionOrigin, a ahp.ChatTurnResume) {
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	n := len(c.state.Turns)
	if c.state.ActiveTurn != nil || n == 0 || c.state.Turns[n-1].ID != a.TurnID || !resumable(&c.state.Turns[n-1]) {
		c.refuse(cl, origin, a, "Only the latest turn, ended by a resumable error while nothing runs, can be resumed.")
		return
	}
	last := c.state.Turns[n-1]
	c.apply(a, origin)
	started, err := time.Parse(time.RFC3339Nano, last.StartedAt)
	if err != nil {
		started = c.cfg.Now()
	}
	t := &runningTurn{id: last.ID, started: started, sender: c.senders[last.ID], tools: make(map[string]bool)}
	c.turn = t
	c.persistRunning()
	c.send(t, agent.Turn{ID: last.ID, Text: last.Message.Text, Model: modelOf(last.Message)})
}

func resumable(t *ahp.Turn) bool {
	if t.State != ahp.TurnError || len(t.ResponseParts) == 0 {
		return false
	}
	return t.ResponseParts[len(t.ResponseParts)-1].IsResumableError()
}

// heldByResumableError: nothing starts while the latest turn ended in an
// error a client can resume (C-TURN-38).
func (c *Chat) heldByResumableError() bool {
	n := len(c.state.Turns)
	return n > 0 && resumable(&c.state.Turns[n-1])
}

// clientPendingSet queues or steers (C-TURN-20..23, 49..51).
func (c *Chat) clientPendingSet(cl Client, origin *ahp.ActionOrigin, a ahp.ChatPendingMessageSet) {
	if c.readOnly() {
		c.refuse(cl, origin, a, reasonReadOnly)
		return
	}
	switch a.Kind {
	case ahp.PendingQueued:
		c.apply(a, origin)
		c.startNext()
	case ahp.PendingSteering:
		if c.cfg.Agent != nil && !c.caps.Steering {
			c.refuse(cl, origin, a, ReasonNoSteering)
			return
		}
		if s := c.state.SteeringMessage; s != nil && s.ID == a.ID && c.steer.handed && c.steer.id == a.ID {
			if sameMessage(s.Message, a.Message) {
				// C-TURN-50: answered, not handed twice.
				c.apply(a, origin)
				return
			}
			c.refuse(cl, origin, a, ReasonSteeringBusy)
			return
		}
		if c.steer.handed && c.state.SteeringMessage != nil && c.state.SteeringMessage.ID != a.ID {
			// The backend holds another steering message it has not run.
			c.refuse(cl, origin, a, ReasonSteeringBusy)
			return
		}
		c.apply(a, origin)
		if c.turn != nil {
			c.handSteering()
		} else {
			c.startNext()
		}
	default:
		c.refuse(cl, origin, a, fmt.Sprintf("Unknown pending message kind %q.", a.Kind))
	}
}

func sameMessage(a, b ahp.Message) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// clientPendingRemoved takes a pending message back (C-TURN-55..59).
func (c *Chat) clientPendingRemoved(cl Client, origin *ahp.ActionOrigin, a ahp.ChatPendingMessageRemoved) {
	if a.Kind == ahp.PendingSteering && c.steer.handed && c.steer.id == a.ID {
		if c.conv == nil || !c.conv.Withdraw(a.ID) {
			c.refuse(cl, origin, a, ReasonSteeringBusy)
			return
		}
		c.steer = steeringState{}
	}
	c.apply(a, origin)
	c.startNext()
}

func (c *Chat) clientConfirm(cl Client, origin *ahp.ActionOrigin, a ahp.ChatToolCallConfirmed) {
	t := c.turn
	if t == nil || a.TurnID != t.id || !t.tools[a.ToolCallID] {
		c.refuse(cl, origin, a, "No tool call of the running turn waits for that confirmation.")
		return
	}
	c.apply(a, origin)
	if c.conv != nil {
		if err := c.conv.Confirm(a.TurnID, a.ToolCallID, a.Approved); err != nil {
			c.log.Warn("confirm tool call", "tool", a.ToolCallID, "err", err)
		}
	}
}

// handSteering hands the pending steering message to the running turn,
// again on each of the turn's actions until the backend takes it
// (C-TURN-41, 42).
func (c *Chat) handSteering() {
	s := c.state.SteeringMessage
	t := c.turn
	if s == nil || t == nil || !t.sent || t.command != nil || c.conv == nil || c.steer.handed {
		return
	}
	switch c.conv.Steer(agent.Steering{ID: s.ID, TurnID: t.id, Text: s.Message.Text}) {
	case agent.SteerTaken:
		c.steer = steeringState{handed: true, id: s.ID}
	case agent.SteerNotYet:
	case agent.SteerUnsupported:
		c.log.Warn("backend refused steering", "steering", s.ID)
		c.apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: s.ID}, nil)
	case agent.SteerRefused:
		c.log.Info("backend would not take steering message; taken out", "steering", s.ID)
		c.apply(ahp.ChatPendingMessageRemoved{Kind: ahp.PendingSteering, ID: s.ID}, nil)
	}
}

// startNext starts what waits when nothing runs: a steering message ahead
// of every queued one (C-TURN-45, 46), else the head of the queue
// (C-TURN-26, 28). Nothing starts behind a resumable failure (C-TURN-38)
// or while the backend holds a steering message (C-TURN-40).
func (c *Chat) startNext() {
	if c.turn != nil || c.state.ActiveTurn != nil || c.steer.handed || c.heldByResumableError() || c.readOnly() {
		return
	}
	var next *ahp.PendingMessage
	if s := c.state.SteeringMessage; s != nil {
		next = s
	} else if len(c.state.QueuedMessages) > 0 {
		next = &c.state.QueuedMessages[0]
	}
	if next == nil {
		return
	}
	p := *next
	sender, _ := p.Message.Meta[SenderMetaKey].(string)
	c.admit(ahp.ChatTurnStarted{
		TurnID:          uuid.NewString(),
		StartedAt:       isoTime(c.cfg.Now()),
		Message:         p.Message,
		QueuedMessageID: p.ID,
	}, nil, sender)
}

// autoTitle names the chat after its first message (C-COMP-26): a ! command
// gives a provisional title its first message replaces (C-COMP-27, 28).
func (c *Chat) autoTitle(text string, first, isCommand bool) {
	if !first && !c.record.TitleProvisional {
		return
	}
	if !first && isCommand {
		return
	}
	if !c.record.TitleProvisional && c.state.Title != "" && c.state.Title != DefaultTitle {
		return
	}
	title := CleanTitle(text)
	if title == "" {
		return
	}
	c.setTitle(title, isCommand)
}

// DefaultTitle is an unnamed chat's title.
const DefaultTitle = "New Chat"

// CleanTitle makes a short one-line title out of a message.
func CleanTitle(text string) string {
	line := strings.TrimSpace(text)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	line = strings.Join(strings.Fields(line), " ")
	const limit = 60
	if r := []rune(line); len(r) > limit {
		line = strings.TrimSpace(string(r[:limit-1])) + "…"
	}
	return line
}

// persistStarted writes a turn that just started as running before the
// backend hears of it, synchronously: a process that dies mid-turn then
// ends it with an error on its next start, never drops it silently.
func (c *Chat) persistStarted() {
	rec, ok := c.runningRecord()
	if !ok {
		return
	}
	if err := c.cfg.Store.PutTurn(context.Background(), rec); err != nil {
		c.log.Error("store started turn", "turn", rec.ID, "err", err)
	}
}

// persistRunning writes the active turn as running behind the actor; long
// turns are written again every few seconds so a crash loses at most their
// tail.
func (c *Chat) persistRunning() {
	rec, ok := c.runningRecord()
	if !ok {
		return
	}
	c.cfg.Store.Enqueue(func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, rec) })
}

func (c *Chat) runningRecord() (store.TurnRecord, bool) {
	at := c.state.ActiveTurn
	if at == nil {
		return store.TurnRecord{}, false
	}
	body, err := json.Marshal(at)
	if err != nil {
		c.log.Error("marshal running turn", "err", err)
		return store.TurnRecord{}, false
	}
	started, _ := time.Parse(time.RFC3339Nano, at.StartedAt)
	return store.TurnRecord{
		Chat: c.cfg.URI, ID: at.ID, Seq: len(c.state.Turns), State: store.TurnRunning,
		Sender: c.senders[at.ID], Command: c.commands[at.ID], StartedAt: started, Body: body,
	}, true
}

// persistEnded writes the turn that just ended (the last of state.Turns).
func (c *Chat) persistEnded(id string) {
	n := len(c.state.Turns)
	if n == 0 || c.state.Turns[n-1].ID != id {
		return
	}
	t := c.state.Turns[n-1]
	body, err := json.Marshal(t)
	if err != nil {
		c.log.Error("marshal ended turn", "err", err)
		return
	}
	started, _ := time.Parse(time.RFC3339Nano, t.StartedAt)
	rec := store.TurnRecord{
		Chat: c.cfg.URI, ID: t.ID, Seq: n - 1, State: string(t.State), Sender: c.senders[id],
		Point: c.points[id], Command: c.commands[id], StartedAt: started, Body: body,
	}
	c.cfg.Store.Enqueue(func(ctx context.Context, s *store.Store) error { return s.PutTurn(ctx, rec) })
	c.persistRecord()
}

func (c *Chat) persistDraft() {
	var raw json.RawMessage
	if c.state.Draft != nil {
		raw, _ = json.Marshal(c.state.Draft)
	}
	uri := c.cfg.URI
	c.record.Draft = raw
	c.cfg.Store.Enqueue(func(ctx context.Context, s *store.Store) error { return s.SetDraft(ctx, uri, raw) })
}

// turnCursor is the fetchTurns cursor naming "the turns before this one".
func turnCursor(turnID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("before:" + turnID))
}

func parseCursor(cur string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil {
		return "", false
	}
	id, ok := strings.CutPrefix(string(b), "before:")
	return id, ok && id != ""
}

// FetchTurns publishes the page of turns older than cursor as
// chat/turnsLoaded to every watcher before it returns (C-CMD-11..14).
func (c *Chat) FetchTurns(ctx context.Context, cursor string) error {
	var ferr error
	err := c.call(ctx, func() { ferr = c.fetchTurns(cursor) })
	if err != nil {
		return err
	}
	return ferr
}

func (c *Chat) fetchTurns(cursor string) error {
	end := max(c.loadedFrom, 0)
	if cursor != "" {
		id, ok := parseCursor(cursor)
		if !ok {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: unrecognized cursor %q", cursor)
		}
		end = -1
		for i := range c.state.Turns {
			if c.state.Turns[i].ID == id {
				end = i
				break
			}
		}
		if end < 0 {
			return ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: cursor %q names no turn of this chat", cursor)
		}
	}
	start := max(0, end-c.cfg.TurnsView)
	page := append([]ahp.Turn(nil), c.state.Turns[start:end]...)
	a := ahp.ChatTurnsLoaded{Turns: page}
	if page == nil {
		a.Turns = []ahp.Turn{}
	}
	if start > 0 {
		cur := turnCursor(c.state.Turns[start].ID)
		a.TurnsNextCursor = &cur
	}
	if c.loadedFrom < 0 || start < c.loadedFrom {
		c.loadedFrom = start
	}
	// The reducer prepends and dedupes; the actor's own state holds every
	// turn already, so only the watchers change.
	c.cfg.Bus.Publish(c.cfg.URI, a, nil, "")
	return nil
}
