package reduce

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Chat applies a chat-channel action to s.
func Chat(s *ahp.ChatState, a ahp.Action) {
	switch a := a.(type) {
	case ahp.ChatTurnStarted:
		turnStarted(s, a)
	case ahp.ChatDelta:
		appendToPart(s, a.TurnID, a.PartID, ahp.PartMarkdown, a.Content)
	case ahp.ChatReasoning:
		appendToPart(s, a.TurnID, a.PartID, ahp.PartReasoning, a.Content)
	case ahp.ChatResponsePart:
		t := activeTurn(s, a.TurnID)
		// Error parts travel only in chat/error (AHP-1.0.md §2).
		if t == nil || a.Part.Kind == ahp.PartError {
			return
		}
		t.ResponseParts = append(t.ResponseParts, a.Part)
	case ahp.ChatUsage:
		if t := activeTurn(s, a.TurnID); t != nil {
			u := a.Usage
			t.Usage = &u
		}
	case ahp.ChatTurnComplete:
		endTurn(s, a.TurnID, a.Duration, ahp.TurnComplete, nil)
	case ahp.ChatTurnCancelled:
		endTurn(s, a.TurnID, a.Duration, ahp.TurnCancelled, nil)
	case ahp.ChatError:
		part := a.Part
		part.Kind = ahp.PartError
		endTurn(s, a.TurnID, a.Duration, ahp.TurnError, &part)
	case ahp.ChatTurnResume:
		turnResume(s, a.TurnID)

	case ahp.ChatToolCallStart:
		t := activeTurn(s, a.TurnID)
		if t == nil {
			return
		}
		t.ResponseParts = append(t.ResponseParts, ahp.ToolCallPart(&ahp.ToolCallState{
			Status:      ahp.ToolStreaming,
			ToolCallID:  a.ToolCallID,
			ToolName:    a.ToolName,
			DisplayName: a.DisplayName,
			Intention:   a.Intention,
			Contributor: a.Contributor,
			Meta:        a.Meta,
		}))
	case ahp.ChatToolCallDelta:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			return toolCallDelta(tc, a)
		})
	case ahp.ChatToolCallReady:
		if updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			return toolCallReady(tc, a)
		}) {
			refreshStatus(s)
		}
	case ahp.ChatToolCallConfirmed:
		if updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			return toolCallConfirmed(tc, a)
		}) {
			refreshStatus(s)
		}
	case ahp.ChatToolCallComplete:
		if updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			return toolCallComplete(tc, a)
		}) {
			refreshStatus(s)
		}
	case ahp.ChatToolCallResultConfirmed:
		if updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			return toolCallResultConfirmed(tc, a)
		}) {
			refreshStatus(s)
		}
	case ahp.ChatToolCallContentChanged:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			if tc.Status != ahp.ToolRunning {
				return tc, false
			}
			tc.Meta = metaOr(a.Meta, tc.Meta)
			tc.Content = slices.Clone(a.Content)
			return tc, true
		})
	case ahp.ChatToolCallAuthRequired:
		if updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			// Only a running tool contributed by an MCP server can pause for auth.
			if tc.Status != ahp.ToolRunning || tc.Contributor == nil || tc.Contributor.Kind != ahp.ContributorMCP {
				return tc, false
			}
			auth := a.Auth
			tc.Status = ahp.ToolAuthRequired
			tc.Auth = &auth
			tc.Meta = metaOr(a.Meta, tc.Meta)
			return tc, true
		}) {
			refreshStatus(s)
		}
	case ahp.ChatToolCallAuthResolved:
		if updateToolCall(s, a.TurnID, a.ToolCallID, func(tc ahp.ToolCallState) (ahp.ToolCallState, bool) {
			if tc.Status != ahp.ToolAuthRequired {
				return tc, false
			}
			tc.Status = ahp.ToolRunning
			tc.Auth = nil
			tc.Meta = metaOr(a.Meta, tc.Meta)
			return tc, true
		}) {
			refreshStatus(s)
		}

	case ahp.ChatPendingMessageSet:
		pendingMessageSet(s, a)
	case ahp.ChatPendingMessageRemoved:
		pendingMessageRemoved(s, a)
	case ahp.ChatQueuedMessagesReordered:
		queuedMessagesReordered(s, a.Order)
	case ahp.ChatDraftChanged:
		s.Draft = a.Draft
	case ahp.ChatTruncated:
		truncate(s, a.TurnID)
	case ahp.ChatTurnsLoaded:
		turnsLoaded(s, a)
	case ahp.ChatActivityChanged:
		s.Activity = a.Activity
	case ahp.ChatWorkingDirectorySet:
		s.WorkingDirectories = addURI(s.WorkingDirectories, a.Directory)
	case ahp.ChatWorkingDirectoryRemoved:
		s.WorkingDirectories = removeURI(s.WorkingDirectories, a.Directory)
	case ahp.ChatIsReadChanged:
		s.Status = s.Status.With(ahp.StatusIsRead, a.IsRead)
	case ahp.ChatIsArchivedChanged:
		s.Status = s.Status.With(ahp.StatusIsArchived, a.IsArchived)

	case ahp.ChatInputRequested:
		inputRequested(s, a.Request)
	case ahp.ChatInputAnswerChanged:
		inputAnswerChanged(s, a)
	case ahp.ChatInputCompleted:
		inputCompleted(s, a)

	case ahp.ChatBackgroundWorkSet:
		i := slices.IndexFunc(s.BackgroundWork, func(w ahp.BackgroundWork) bool { return w.ID == a.Work.ID })
		next := slices.Clone(s.BackgroundWork)
		if i >= 0 {
			next[i] = a.Work
		} else {
			next = append(next, a.Work)
		}
		s.BackgroundWork = next
	case ahp.ChatBackgroundWorkRemoved:
		i := slices.IndexFunc(s.BackgroundWork, func(w ahp.BackgroundWork) bool { return w.ID == a.ID })
		if i >= 0 {
			s.BackgroundWork = without(s.BackgroundWork, i)
		}
	case ahp.ChatMovableChanged:
		s.Movable = a.Movable
	case ahp.ChatChangesetsChanged:
		s.Changesets = slices.Clone(a.Changesets)
	case ahp.ChatCanvasesChanged:
		s.Canvases = slices.Clone(a.Canvases)
	}
}

// ChatSummaryOf returns the ChatSummary fields of s (the catalogue entry a
// session holds for the chat).
func ChatSummaryOf(s *ahp.ChatState) ahp.ChatSummary {
	sum := ahp.ChatSummary{
		Resource:           s.Resource,
		Title:              s.Title,
		Status:             s.Status,
		Activity:           s.Activity,
		ModifiedAt:         s.ModifiedAt,
		Movable:            s.Movable,
		Interactivity:      s.Interactivity,
		WorkingDirectories: slices.Clone(s.WorkingDirectories),
	}
	if s.Changes != nil {
		c := *s.Changes
		sum.Changes = &c
	}
	if s.Origin != nil {
		o := *s.Origin
		sum.Origin = &o
	}
	return sum
}

// CheckTurnResume reports whether chat/turnResume for turnID may be accepted
// (AHP-1.0.md §3): no turn is active, turnID is the latest turn, it ended in
// an error, and its final part is an error part with resumable:true. The
// reducer itself only checks what it needs to apply the action; the host
// must call this first. The error wraps ahp.ErrInvalidRequest.
func CheckTurnResume(s *ahp.ChatState, turnID string) error {
	if s.ActiveTurn != nil {
		return ahp.Errorf(ahp.ErrInvalidRequest, "chat/turnResume: turn %s is active", s.ActiveTurn.ID)
	}
	if len(s.Turns) == 0 {
		return ahp.Errorf(ahp.ErrInvalidRequest, "chat/turnResume: chat has no turns")
	}
	last := &s.Turns[len(s.Turns)-1]
	if last.ID != turnID {
		return ahp.Errorf(ahp.ErrInvalidRequest, "chat/turnResume: turn %s is not the latest turn", turnID)
	}
	if last.State != ahp.TurnError {
		return ahp.Errorf(ahp.ErrInvalidRequest, "chat/turnResume: turn %s ended %s, not error", turnID, last.State)
	}
	if n := len(last.ResponseParts); n == 0 || !last.ResponseParts[n-1].IsResumableError() {
		return ahp.Errorf(ahp.ErrInvalidRequest, "chat/turnResume: turn %s did not end with a resumable error", turnID)
	}
	return nil
}

// activeTurn returns the active turn when its id is turnID, else nil.
func activeTurn(s *ahp.ChatState, turnID string) *ahp.ActiveTurn {
	if s.ActiveTurn == nil || s.ActiveTurn.ID != turnID {
		return nil
	}
	return s.ActiveTurn
}

// chatActivity derives the activity bits of a chat from its active turn.
func chatActivity(s *ahp.ChatState) ahp.SessionStatus {
	t := s.ActiveTurn
	if t == nil {
		return ahp.StatusIdle
	}
	for _, p := range t.ResponseParts {
		switch {
		case p.Kind == ahp.PartInputRequest && p.Response == "":
			return ahp.StatusInputNeeded
		case p.Kind == ahp.PartToolCall && p.ToolCall != nil:
			switch p.ToolCall.Status {
			case ahp.ToolPendingConfirmation, ahp.ToolAuthRequired, ahp.ToolPendingResultConfirmation:
				return ahp.StatusInputNeeded
			}
		}
	}
	return ahp.StatusInProgress
}

// refreshStatus recomputes the activity bits of s, keeping its flags.
func refreshStatus(s *ahp.ChatState) {
	s.Status = s.Status.WithActivity(chatActivity(s))
}

// turnStarted starts a turn. A start whose turnId is already the active turn
// or a finished turn is a no-op, so a replayed start never resets a
// streaming turn (AHP-1.0.md §5).
func turnStarted(s *ahp.ChatState, a ahp.ChatTurnStarted) {
	if s.ActiveTurn != nil && s.ActiveTurn.ID == a.TurnID {
		return
	}
	if slices.ContainsFunc(s.Turns, func(t ahp.Turn) bool { return t.ID == a.TurnID }) {
		return
	}
	s.ActiveTurn = &ahp.ActiveTurn{
		ID:            a.TurnID,
		StartedAt:     a.StartedAt,
		Message:       a.Message,
		ResponseParts: []ahp.ResponsePart{},
	}
	if a.StartedAt != "" {
		s.ModifiedAt = a.StartedAt
	}
	refreshStatus(s)
	s.Status = s.Status.With(ahp.StatusIsRead, false)
	if id := a.QueuedMessageID; id != "" {
		if s.SteeringMessage != nil && s.SteeringMessage.ID == id {
			s.SteeringMessage = nil
		}
		if i := slices.IndexFunc(s.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == id }); i >= 0 {
			s.QueuedMessages = nilIfEmpty(without(s.QueuedMessages, i))
		}
	}
}

// endTurn moves the active turn into turns with the given end state. Tool
// calls still in flight are cancelled with reason "skipped"; errPart, when
// set, is appended last. modifiedAt becomes startedAt + duration.
func endTurn(s *ahp.ChatState, turnID string, duration int64, state ahp.TurnState, errPart *ahp.ResponsePart) {
	t := activeTurn(s, turnID)
	if t == nil {
		return
	}
	parts := make([]ahp.ResponsePart, 0, len(t.ResponseParts)+1)
	for _, p := range t.ResponseParts {
		if p.Kind == ahp.PartToolCall && p.ToolCall != nil &&
			p.ToolCall.Status != ahp.ToolCompleted && p.ToolCall.Status != ahp.ToolCancelled {
			p = ahp.ToolCallPart(skipped(p.ToolCall))
		}
		parts = append(parts, p)
	}
	if errPart != nil {
		parts = append(parts, *errPart)
	}
	// The duration is producer-supplied; a negative one is clamped.
	duration = max(duration, 0)
	s.Turns = append(s.Turns, ahp.Turn{
		ID:            t.ID,
		StartedAt:     t.StartedAt,
		Duration:      &duration,
		Message:       t.Message,
		ResponseParts: parts,
		Usage:         t.Usage,
		State:         state,
	})
	s.ActiveTurn = nil
	if at, ok := addMillis(t.StartedAt, duration); ok {
		s.ModifiedAt = at
	}
	if state == ahp.TurnError {
		s.Status = s.Status.WithActivity(ahp.StatusError)
	} else {
		refreshStatus(s)
	}
}

// skipped returns tc cancelled with reason "skipped", keeping only the
// fields every tool call state carries.
func skipped(tc *ahp.ToolCallState) *ahp.ToolCallState {
	inv := tc.InvocationMessage
	if inv == nil {
		inv = ahp.Plain("")
	}
	return &ahp.ToolCallState{
		Status:            ahp.ToolCancelled,
		ToolCallID:        tc.ToolCallID,
		ToolName:          tc.ToolName,
		DisplayName:       tc.DisplayName,
		Intention:         tc.Intention,
		Contributor:       tc.Contributor,
		Meta:              tc.Meta,
		InvocationMessage: inv,
		ToolInput:         tc.ToolInput,
		Reason:            ahp.CancelSkipped,
	}
}

// addMillis returns the ISO timestamp ms milliseconds after ts, formatted
// like JavaScript's toISOString.
func addMillis(ts string, ms int64) (string, bool) {
	start, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "", false
	}
	return start.Add(time.Duration(ms) * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z"), true
}

// turnResume reopens the latest turn when it ended in an error and no turn
// is active, keeping its message, parts (the error part included) and
// usage (AHP-1.0.md §3). Whether the error is resumable is the host's check
// (CheckTurnResume).
func turnResume(s *ahp.ChatState, turnID string) {
	if s.ActiveTurn != nil || len(s.Turns) == 0 {
		return
	}
	last := s.Turns[len(s.Turns)-1]
	if last.ID != turnID || last.State != ahp.TurnError {
		return
	}
	startedAt := last.StartedAt
	if startedAt == "" {
		startedAt = s.ModifiedAt
	}
	s.Turns = s.Turns[: len(s.Turns)-1 : len(s.Turns)-1]
	parts := slices.Clone(last.ResponseParts)
	if parts == nil {
		parts = []ahp.ResponsePart{}
	}
	s.ActiveTurn = &ahp.ActiveTurn{
		ID:            last.ID,
		StartedAt:     startedAt,
		Message:       last.Message,
		ResponseParts: parts,
		Usage:         last.Usage,
	}
	refreshStatus(s)
	s.Status = s.Status.With(ahp.StatusIsRead, false)
}

// appendToPart appends text to the markdown or reasoning part partID of the
// active turn. The first part with that id decides; a part of another kind
// makes it a no-op.
func appendToPart(s *ahp.ChatState, turnID, partID, kind, text string) {
	t := activeTurn(s, turnID)
	if t == nil || partID == "" {
		return
	}
	for i, p := range t.ResponseParts {
		if partKey(p) != partID {
			continue
		}
		if p.Kind == kind {
			p.AppendContent(text)
			t.ResponseParts[i] = p
		}
		return
	}
}

// partKey is the id actions use to target a part: the part id, or the tool
// call id of a tool call part.
func partKey(p ahp.ResponsePart) string {
	switch p.Kind {
	case ahp.PartMarkdown, ahp.PartReasoning:
		return p.ID
	case ahp.PartToolCall:
		if p.ToolCall != nil {
			return p.ToolCall.ToolCallID
		}
	}
	return ""
}

// updateToolCall applies f to a copy of the tool call toolCallID of the
// active turn turnID and stores the result when f reports a change.
func updateToolCall(s *ahp.ChatState, turnID, toolCallID string, f func(ahp.ToolCallState) (ahp.ToolCallState, bool)) bool {
	t := activeTurn(s, turnID)
	if t == nil {
		return false
	}
	for i, p := range t.ResponseParts {
		if p.Kind != ahp.PartToolCall || p.ToolCall == nil || p.ToolCall.ToolCallID != toolCallID {
			continue
		}
		next, changed := f(*p.ToolCall)
		if !changed {
			return false
		}
		t.ResponseParts[i] = ahp.ToolCallPart(&next)
		return true
	}
	return false
}

func metaOr(meta, old map[string]any) map[string]any {
	if meta != nil {
		return meta
	}
	return old
}

func toolCallDelta(tc ahp.ToolCallState, a ahp.ChatToolCallDelta) (ahp.ToolCallState, bool) {
	if tc.Status != ahp.ToolStreaming {
		return tc, false
	}
	tc.Meta = metaOr(a.Meta, tc.Meta)
	if a.Content != "" {
		partial := a.Content
		if tc.PartialInput != nil {
			partial = *tc.PartialInput + a.Content
		}
		tc.PartialInput = &partial
	}
	if a.InvocationMessage != nil {
		tc.InvocationMessage = a.InvocationMessage
	}
	return tc, true
}

// base returns the fields every tool call state keeps across transitions.
func base(tc ahp.ToolCallState) ahp.ToolCallState {
	return ahp.ToolCallState{
		ToolCallID:        tc.ToolCallID,
		ToolName:          tc.ToolName,
		DisplayName:       tc.DisplayName,
		Intention:         tc.Intention,
		Contributor:       tc.Contributor,
		Meta:              tc.Meta,
		InvocationMessage: tc.InvocationMessage,
		ToolInput:         tc.ToolInput,
	}
}

// refineContributor applies the contributor sent with chat/toolCallReady. It
// may add or refine metadata but never changes which client executes the
// tool: a client contributor is only replaced by the same client.
func refineContributor(current, next *ahp.ToolCallContributor) *ahp.ToolCallContributor {
	switch {
	case next == nil:
		return current
	case current != nil && current.Kind == ahp.ContributorClient:
		if next.Kind == ahp.ContributorClient && next.ClientID == current.ClientID {
			return next
		}
		return current
	case next.Kind == ahp.ContributorClient:
		return current
	}
	return next
}

// toolCallReady moves a streaming, running or pending tool call to
// pending-confirmation, or to running when the action carries confirmed.
func toolCallReady(tc ahp.ToolCallState, a ahp.ChatToolCallReady) (ahp.ToolCallState, bool) {
	switch tc.Status {
	case ahp.ToolStreaming, ahp.ToolRunning, ahp.ToolPendingConfirmation:
	default:
		return tc, false
	}
	next := base(tc)
	if a.Intention != "" {
		next.Intention = a.Intention
	}
	if len(a.ToolInput) > 0 {
		next.ToolInput = a.ToolInput
	}
	next.Contributor = refineContributor(tc.Contributor, a.Contributor)
	next.Meta = metaOr(a.Meta, tc.Meta)
	if a.InvocationMessage != nil {
		next.InvocationMessage = a.InvocationMessage
	} else if next.InvocationMessage == nil {
		next.InvocationMessage = ahp.Plain("")
	}
	if a.Confirmed != "" {
		next.Status = ahp.ToolRunning
		next.Confirmed = a.Confirmed
		return next, true
	}
	next.Status = ahp.ToolPendingConfirmation
	next.ConfirmationTitle = a.ConfirmationTitle
	next.RiskAssessment = a.RiskAssessment
	next.Edits = a.Edits
	next.Editable = a.Editable
	next.Options = a.Options
	if tc.Status == ahp.ToolPendingConfirmation {
		// A refining ready keeps what it does not restate.
		if next.ConfirmationTitle == nil {
			next.ConfirmationTitle = tc.ConfirmationTitle
		}
		if next.RiskAssessment == nil {
			next.RiskAssessment = tc.RiskAssessment
		}
		if next.Edits == nil {
			next.Edits = tc.Edits
		}
		if next.Editable == nil {
			next.Editable = tc.Editable
		}
		if next.Options == nil {
			next.Options = tc.Options
		}
	}
	return next, true
}

func selectedOption(options []ahp.ConfirmationOption, id string) *ahp.ConfirmationOption {
	if id == "" {
		return nil
	}
	for _, o := range options {
		if o.ID == id {
			return &o
		}
	}
	return nil
}

// toolCallConfirmed approves (→ running) or denies (→ cancelled) a pending
// tool call.
func toolCallConfirmed(tc ahp.ToolCallState, a ahp.ChatToolCallConfirmed) (ahp.ToolCallState, bool) {
	if tc.Status != ahp.ToolPendingConfirmation {
		return tc, false
	}
	next := base(tc)
	next.Meta = metaOr(a.Meta, tc.Meta)
	next.SelectedOption = selectedOption(tc.Options, a.SelectedOptionID)
	if a.Approved {
		next.Status = ahp.ToolRunning
		next.Confirmed = a.Confirmed
		if next.Confirmed == "" {
			next.Confirmed = ahp.ConfirmedNotNeeded
		}
		// An edited input replaces an inline (string) tool input; a
		// referenced input is rewritten by the host before it echoes.
		if a.EditedToolInput != nil && isJSONString(tc.ToolInput) {
			next.ToolInput = ahp.ToolInputString(*a.EditedToolInput)
		}
		return next, true
	}
	next.Status = ahp.ToolCancelled
	next.Reason = a.Reason
	if next.Reason == "" {
		next.Reason = ahp.CancelDenied
	}
	next.ReasonMessage = a.ReasonMessage
	next.UserSuggestion = a.UserSuggestion
	return next, true
}

func isJSONString(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			return true
		}
		return false
	}
	return false
}

// toolCallComplete finishes a running or pending-confirmation tool call, or
// cancels an auth-required one with a failed result (a successful result
// from auth-required is ignored).
func toolCallComplete(tc ahp.ToolCallState, a ahp.ChatToolCallComplete) (ahp.ToolCallState, bool) {
	next := base(tc)
	next.Meta = metaOr(a.Meta, tc.Meta)
	next.Confirmed = ahp.ConfirmedNotNeeded
	content := a.Result.Content
	fromAuth := false
	switch tc.Status {
	case ahp.ToolRunning:
		next.Confirmed = tc.Confirmed
		next.SelectedOption = tc.SelectedOption
	case ahp.ToolPendingConfirmation:
	case ahp.ToolAuthRequired:
		if a.Result.Success {
			return tc, false
		}
		next.Confirmed = tc.Confirmed
		next.SelectedOption = tc.SelectedOption
		if content == nil {
			content = tc.Content
		}
		fromAuth = true
	default:
		return tc, false
	}
	if next.InvocationMessage == nil {
		next.InvocationMessage = ahp.Plain("")
	}
	success := a.Result.Success
	next.Success = &success
	next.PastTenseMessage = a.Result.PastTenseMessage
	next.Content = slices.Clone(content)
	next.StructuredContent = a.Result.StructuredContent
	next.Error = a.Result.Error
	next.Status = ahp.ToolCompleted
	if a.RequiresResultConfirmation && !fromAuth {
		next.Status = ahp.ToolPendingResultConfirmation
	}
	return next, true
}

// toolCallResultConfirmed approves (→ completed) or denies (→ cancelled with
// reason result-denied) a pending result.
func toolCallResultConfirmed(tc ahp.ToolCallState, a ahp.ChatToolCallResultConfirmed) (ahp.ToolCallState, bool) {
	if tc.Status != ahp.ToolPendingResultConfirmation {
		return tc, false
	}
	if a.Approved {
		tc.Status = ahp.ToolCompleted
		tc.Meta = metaOr(a.Meta, tc.Meta)
		return tc, true
	}
	next := base(tc)
	next.Meta = metaOr(a.Meta, tc.Meta)
	next.Status = ahp.ToolCancelled
	next.Reason = ahp.CancelResultDenied
	next.SelectedOption = tc.SelectedOption
	return next, true
}

func pendingMessageSet(s *ahp.ChatState, a ahp.ChatPendingMessageSet) {
	m := ahp.PendingMessage{ID: a.ID, Message: a.Message}
	switch a.Kind {
	case ahp.PendingSteering:
		s.SteeringMessage = &m
	case ahp.PendingQueued:
		next := slices.Clone(s.QueuedMessages)
		if i := slices.IndexFunc(next, func(q ahp.PendingMessage) bool { return q.ID == a.ID }); i >= 0 {
			next[i] = m
		} else {
			next = append(next, m)
		}
		s.QueuedMessages = next
	}
}

func pendingMessageRemoved(s *ahp.ChatState, a ahp.ChatPendingMessageRemoved) {
	switch a.Kind {
	case ahp.PendingSteering:
		if s.SteeringMessage != nil && s.SteeringMessage.ID == a.ID {
			s.SteeringMessage = nil
		}
	case ahp.PendingQueued:
		if i := slices.IndexFunc(s.QueuedMessages, func(q ahp.PendingMessage) bool { return q.ID == a.ID }); i >= 0 {
			// Removing the last queued message leaves the list absent.
			s.QueuedMessages = nilIfEmpty(without(s.QueuedMessages, i))
		}
	}
}

// queuedMessagesReordered puts the listed ids first in the given order;
// unknown ids are ignored and unlisted messages follow in their old order.
func queuedMessagesReordered(s *ahp.ChatState, order []string) {
	if s.QueuedMessages == nil {
		return
	}
	byID := make(map[string]int, len(s.QueuedMessages))
	for i, m := range s.QueuedMessages {
		byID[m.ID] = i
	}
	taken := make(map[string]bool, len(order))
	next := make([]ahp.PendingMessage, 0, len(s.QueuedMessages))
	for _, id := range order {
		if i, ok := byID[id]; ok && !taken[id] {
			taken[id] = true
			next = append(next, s.QueuedMessages[i])
		}
	}
	for _, m := range s.QueuedMessages {
		if !taken[m.ID] {
			next = append(next, m)
		}
	}
	s.QueuedMessages = next
}

// truncate keeps turns up to and including turnID (all of them cleared when
// turnID is empty) and drops the active turn. An unknown turnID is a no-op.
func truncate(s *ahp.ChatState, turnID string) {
	if turnID == "" {
		s.Turns = []ahp.Turn{}
		s.TurnsNextCursor = nil
	} else {
		i := slices.IndexFunc(s.Turns, func(t ahp.Turn) bool { return t.ID == turnID })
		if i < 0 {
			return
		}
		s.Turns = s.Turns[: i+1 : i+1]
	}
	s.ActiveTurn = nil
	refreshStatus(s)
}

// turnsLoaded prepends older turns (skipping ids already loaded) and
// replaces the cursor.
func turnsLoaded(s *ahp.ChatState, a ahp.ChatTurnsLoaded) {
	have := make(map[string]bool, len(s.Turns))
	for _, t := range s.Turns {
		have[t.ID] = true
	}
	next := make([]ahp.Turn, 0, len(a.Turns)+len(s.Turns))
	for _, t := range a.Turns {
		if !have[t.ID] {
			next = append(next, t)
		}
	}
	s.Turns = append(next, s.Turns...)
	s.TurnsNextCursor = a.TurnsNextCursor
}

// openInputRequest returns the index of the unresolved inputRequest part
// with the given request id in the active turn, or -1.
func openInputRequest(t *ahp.ActiveTurn, id string) int {
	return slices.IndexFunc(t.ResponseParts, func(p ahp.ResponsePart) bool {
		return p.Kind == ahp.PartInputRequest && p.Response == "" && p.Request != nil && p.Request.ID == id
	})
}

// inputRequested adds an inputRequest part to the active turn, or replaces
// the unresolved one with the same id (keeping its answers unless the
// request carries some).
func inputRequested(s *ahp.ChatState, req ahp.ChatInputRequest) {
	t := s.ActiveTurn
	if t == nil {
		return
	}
	if i := openInputRequest(t, req.ID); i >= 0 {
		if req.Answers == nil {
			req.Answers = t.ResponseParts[i].Request.Answers
		}
		t.ResponseParts[i] = ahp.ResponsePart{Kind: ahp.PartInputRequest, Request: &req}
	} else {
		t.ResponseParts = append(t.ResponseParts, ahp.ResponsePart{Kind: ahp.PartInputRequest, Request: &req})
	}
	refreshStatus(s)
	s.Status = s.Status.With(ahp.StatusIsRead, false)
}

func inputAnswerChanged(s *ahp.ChatState, a ahp.ChatInputAnswerChanged) {
	t := s.ActiveTurn
	if t == nil {
		return
	}
	i := openInputRequest(t, a.RequestID)
	if i < 0 {
		return
	}
	req := *t.ResponseParts[i].Request
	answers := maps.Clone(req.Answers)
	if a.Answer == nil {
		delete(answers, a.QuestionID)
	} else {
		if answers == nil {
			answers = map[string]ahp.ChatInputAnswer{}
		}
		answers[a.QuestionID] = *a.Answer
	}
	if len(answers) == 0 {
		answers = nil
	}
	req.Answers = answers
	t.ResponseParts[i] = ahp.ResponsePart{Kind: ahp.PartInputRequest, Request: &req}
}

func inputCompleted(s *ahp.ChatState, a ahp.ChatInputCompleted) {
	t := s.ActiveTurn
	if t == nil {
		return
	}
	i := openInputRequest(t, a.RequestID)
	if i < 0 {
		return
	}
	req := *t.ResponseParts[i].Request
	answers := maps.Clone(req.Answers)
	if len(a.Answers) > 0 && answers == nil {
		answers = map[string]ahp.ChatInputAnswer{}
	}
	maps.Copy(answers, a.Answers)
	if len(answers) == 0 {
		answers = nil
	}
	req.Answers = answers
	t.ResponseParts[i] = ahp.ResponsePart{Kind: ahp.PartInputRequest, Request: &req, Response: a.Response}
	refreshStatus(s)
}

// without returns a new slice holding s minus element i.
func without[T any](s []T, i int) []T {
	out := make([]T, 0, len(s)-1)
	out = append(out, s[:i]...)
	return append(out, s[i+1:]...)
}

// fresh copies a slice so an update never writes through memory the
// reducer did not allocate (doc.go, sharing rule).
func fresh[T any](in []T) []T {
	out := make([]T, len(in), len(in)+1)
	copy(out, in)
	return out
}

// upsert returns a fresh copy of list with v in place of the element same
// picks, or v appended when none is.
func upsert[T any](list []T, v T, same func(T) bool) []T {
	out := fresh(list)
	if i := slices.IndexFunc(out, same); i >= 0 {
		out[i] = v
		return out
	}
	return append(out, v)
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// addURI returns list plus u, or list itself when u is present.
func addURI(list []ahp.URI, u ahp.URI) []ahp.URI {
	if slices.Contains(list, u) {
		return list
	}
	return append(slices.Clip(list), u)
}

// removeURI returns list without u (a new slice), or list when u is absent.
func removeURI(list []ahp.URI, u ahp.URI) []ahp.URI {
	i := slices.Index(list, u)
	if i < 0 {
		return list
	}
	return without(list, i)
}
