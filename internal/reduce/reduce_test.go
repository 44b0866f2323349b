package reduce

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

func userMessage(text string) ahp.Message {
	return ahp.Message{Text: text, Origin: ahp.MessageOrigin{Kind: ahp.MessageFromUser}}
}

func newChat() *ahp.ChatState {
	return &ahp.ChatState{
		Resource:   "ahp-chat:/c1",
		Title:      "Chat",
		Status:     ahp.StatusIdle,
		ModifiedAt: "2026-10-02T10:00:00.000Z",
		Turns:      []ahp.Turn{},
	}
}

func started(id string) ahp.ChatTurnStarted {
	return ahp.ChatTurnStarted{TurnID: id, StartedAt: "2026-10-02T10:00:01.000Z", Message: userMessage("hi")}
}

// C-TURN-12, AHP-1.0.md §2: chat/error appends its error part and ends the
// turn with state "error" in one transition; the chat's status is Error.
func TestChatErrorAppendsErrorPartAndEndsTurn(t *testing.T) {
	s := newChat()
	s.Status |= ahp.StatusIsArchived
	Chat(s, started("t1"))
	Chat(s, ahp.ChatResponsePart{TurnID: "t1", Part: ahp.MarkdownPart("md", "partial")})
	Chat(s, ahp.ChatError{TurnID: "t1", Duration: 5123,
		Part: ahp.ErrorPart(ahp.ErrorInfo{ErrorType: "provider", Message: "upstream 503"}, true)})

	if s.ActiveTurn != nil {
		t.Fatalf("active turn still set: %+v", s.ActiveTurn)
	}
	if len(s.Turns) != 1 {
		t.Fatalf("turns = %d, want 1", len(s.Turns))
	}
	turn := s.Turns[0]
	if turn.State != ahp.TurnError || turn.Duration == nil || *turn.Duration != 5123 {
		t.Errorf("turn state/duration = %s/%v", turn.State, turn.Duration)
	}
	if n := len(turn.ResponseParts); n != 2 {
		t.Fatalf("parts = %d, want 2", n)
	}
	last := turn.ResponseParts[1]
	if !last.IsResumableError() || last.Error.Message != "upstream 503" {
		t.Errorf("last part = %+v, want the resumable error part", last)
	}
	if want := ahp.StatusError | ahp.StatusIsArchived; s.Status != want {
		t.Errorf("status = %d, want %d (Error, flags kept)", s.Status, want)
	}
	if s.ModifiedAt != "2026-10-02T10:00:06.123Z" {
		t.Errorf("modifiedAt = %s, want startedAt+duration", s.ModifiedAt)
	}
	b, _ := json.Marshal(turn)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if _, ok := m["error"]; ok {
		t.Errorf("1.0 Turn has no error field: %s", b)
	}
}

// AHP-1.0.md §2 "VS Code tolerance": the legacy 0.8 chat/error {error} still
// decodes, as a non-resumable error part, and re-encodes in the 1.0 form.
func TestChatErrorLegacyFormDecodesAsErrorPart(t *testing.T) {
	a, err := ahp.DecodeAction(json.RawMessage(`{"type":"chat/error","turnId":"t1","duration":7,"error":{"errorType":"runtime","message":"boom"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ce := a.(ahp.ChatError)
	if ce.Part.Kind != ahp.PartError || ce.Part.Error.Message != "boom" || ce.Part.Resumable != nil {
		t.Fatalf("part = %+v", ce.Part)
	}
	out, _ := json.Marshal(ce)
	want := `{"type":"chat/error","turnId":"t1","duration":7,"part":{"kind":"error","error":{"errorType":"runtime","message":"boom"}}}`
	if string(out) != want {
		t.Errorf("encoded %s\nwant     %s", out, want)
	}
}

// AHP-1.0.md §2: chat/responsePart must not carry an error part; reducers
// ignore one there.
func TestResponsePartIgnoresErrorPart(t *testing.T) {
	s := newChat()
	Chat(s, started("t1"))
	Chat(s, ahp.ChatResponsePart{TurnID: "t1", Part: ahp.ErrorPart(ahp.ErrorInfo{Message: "x"}, false)})
	if n := len(s.ActiveTurn.ResponseParts); n != 0 {
		t.Errorf("parts = %d, want 0", n)
	}
}

// AHP-1.0.md §5: chat/turnStarted is a no-op when its turnId is the active
// turn or a finished turn, so a replayed start never resets a streaming turn.
func TestTurnStartedIsIdempotent(t *testing.T) {
	t.Run("active turn", func(t *testing.T) {
		s := newChat()
		Chat(s, started("t1"))
		Chat(s, ahp.ChatResponsePart{TurnID: "t1", Part: ahp.MarkdownPart("md", "streamed")})
		replay := started("t1")
		replay.Message = userMessage("other")
		Chat(s, replay)
		if len(s.ActiveTurn.ResponseParts) != 1 || s.ActiveTurn.Message.Text != "hi" {
			t.Errorf("replayed start reset the turn: %+v", s.ActiveTurn)
		}
	})
	t.Run("finished turn", func(t *testing.T) {
		s := newChat()
		Chat(s, started("t1"))
		Chat(s, ahp.ChatTurnComplete{TurnID: "t1", Duration: 10})
		before := s.ModifiedAt
		Chat(s, started("t1"))
		if s.ActiveTurn != nil || len(s.Turns) != 1 || s.Status != ahp.StatusIdle || s.ModifiedAt != before {
			t.Errorf("replayed start of a finished turn changed the chat: %+v", s)
		}
	})
	t.Run("new turn id starts", func(t *testing.T) {
		s := newChat()
		Chat(s, started("t1"))
		Chat(s, ahp.ChatTurnComplete{TurnID: "t1", Duration: 10})
		Chat(s, started("t2"))
		if s.ActiveTurn == nil || s.ActiveTurn.ID != "t2" || s.Status != ahp.StatusInProgress {
			t.Errorf("t2 did not start: %+v", s.ActiveTurn)
		}
	})
}

// AHP-1.0.md §3: chat/turnResume reopens the latest errored turn with its
// message, parts (the error part included) and usage. The reducer does not
// check resumability; CheckTurnResume is the host's precondition check.
func TestTurnResumeReopensLatestErroredTurn(t *testing.T) {
	errored := func(resumable bool) *ahp.ChatState {
		s := newChat()
		s.Status |= ahp.StatusIsRead
		Chat(s, started("t1"))
		Chat(s, ahp.ChatUsage{TurnID: "t1", Usage: ahp.UsageInfo{InputTokens: 3, OutputTokens: 4}})
		Chat(s, ahp.ChatResponsePart{TurnID: "t1", Part: ahp.MarkdownPart("md", "half")})
		Chat(s, ahp.ChatError{TurnID: "t1", Duration: 100, Part: ahp.ErrorPart(ahp.ErrorInfo{Message: "503"}, resumable)})
		s.Status |= ahp.StatusIsRead
		return s
	}

	s := errored(true)
	if err := CheckTurnResume(s, "t1"); err != nil {
		t.Fatalf("CheckTurnResume: %v", err)
	}
	Chat(s, ahp.ChatTurnResume{TurnID: "t1"})
	if s.ActiveTurn == nil || s.ActiveTurn.ID != "t1" {
		t.Fatalf("turn not reopened: %+v", s)
	}
	if len(s.Turns) != 0 {
		t.Errorf("reopened turn still in turns")
	}
	if n := len(s.ActiveTurn.ResponseParts); n != 2 || s.ActiveTurn.ResponseParts[1].Kind != ahp.PartError {
		t.Errorf("parts not kept with the error part last: %+v", s.ActiveTurn.ResponseParts)
	}
	if s.ActiveTurn.Usage == nil || s.ActiveTurn.Usage.OutputTokens != 4 {
		t.Errorf("usage not kept: %+v", s.ActiveTurn.Usage)
	}
	if s.ActiveTurn.StartedAt != "2026-10-02T10:00:01.000Z" {
		t.Errorf("startedAt = %s", s.ActiveTurn.StartedAt)
	}
	if s.Status != ahp.StatusInProgress {
		t.Errorf("status = %d, want InProgress with IsRead cleared", s.Status)
	}
	// The resumed run ends normally: the same turn moves back into turns.
	Chat(s, ahp.ChatTurnComplete{TurnID: "t1", Duration: 300})
	if len(s.Turns) != 1 || s.Turns[0].State != ahp.TurnComplete || len(s.Turns[0].ResponseParts) != 2 {
		t.Errorf("resumed turn did not complete: %+v", s.Turns)
	}

	// Preconditions-free reducer: a non-resumable error still reopens, but
	// the host's check refuses it.
	s = errored(false)
	if err := CheckTurnResume(s, "t1"); !errors.Is(err, ahp.ErrInvalidRequest) {
		t.Errorf("CheckTurnResume(non-resumable) = %v, want ErrInvalidRequest", err)
	}
	Chat(s, ahp.ChatTurnResume{TurnID: "t1"})
	if s.ActiveTurn == nil {
		t.Errorf("reducer refused a turnResume the host accepted")
	}
}

func TestTurnResumeIsNoOpWhenTurnCannotReopen(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *ahp.ChatState)
		turn  string
	}{
		{"no turns", func(s *ahp.ChatState) {}, "t1"},
		{"not the latest turn", func(s *ahp.ChatState) {
			Chat(s, started("t1"))
			Chat(s, ahp.ChatError{TurnID: "t1", Duration: 1, Part: ahp.ErrorPart(ahp.ErrorInfo{Message: "x"}, true)})
			Chat(s, started("t2"))
			Chat(s, ahp.ChatTurnComplete{TurnID: "t2", Duration: 1})
		}, "t1"},
		{"latest turn completed", func(s *ahp.ChatState) {
			Chat(s, started("t1"))
			Chat(s, ahp.ChatTurnComplete{TurnID: "t1", Duration: 1})
		}, "t1"},
		{"a turn is active", func(s *ahp.ChatState) {
			Chat(s, started("t1"))
			Chat(s, ahp.ChatError{TurnID: "t1", Duration: 1, Part: ahp.ErrorPart(ahp.ErrorInfo{Message: "x"}, true)})
			Chat(s, started("t2"))
		}, "t1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChat()
			tt.setup(s)
			before, _ := json.Marshal(s)
			if err := CheckTurnResume(s, tt.turn); !errors.Is(err, ahp.ErrInvalidRequest) {
				t.Errorf("CheckTurnResume = %v, want ErrInvalidRequest", err)
			}
			Chat(s, ahp.ChatTurnResume{TurnID: tt.turn})
			after, _ := json.Marshal(s)
			if string(before) != string(after) {
				t.Errorf("state changed\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// AHP-1.0.md "What changed" 3: chat/isReadChanged and chat/isArchivedChanged
// flip the IsRead (32) and IsArchived (64) status bits and nothing else.
func TestChatReadAndArchivedFlipStatusBits(t *testing.T) {
	s := newChat()
	s.Status = ahp.StatusInProgress | 128 // an unknown bit survives
	steps := []struct {
		action ahp.Action
		want   ahp.SessionStatus
	}{
		{ahp.ChatIsReadChanged{IsRead: true}, ahp.StatusInProgress | ahp.StatusIsRead | 128},
		{ahp.ChatIsArchivedChanged{IsArchived: true}, ahp.StatusInProgress | ahp.StatusIsRead | ahp.StatusIsArchived | 128},
		{ahp.ChatIsReadChanged{IsRead: false}, ahp.StatusInProgress | ahp.StatusIsArchived | 128},
		{ahp.ChatIsArchivedChanged{IsArchived: false}, ahp.StatusInProgress | 128},
	}
	for _, st := range steps {
		Chat(s, st.action)
		if s.Status != st.want {
			t.Errorf("after %#v status = %d, want %d", st.action, s.Status, st.want)
		}
	}
}

// 0.9.0: chat reducers derive modifiedAt from action data.
func TestModifiedAtComesFromActionData(t *testing.T) {
	s := newChat()
	Chat(s, started("t1"))
	if s.ModifiedAt != "2026-10-02T10:00:01.000Z" {
		t.Errorf("after start modifiedAt = %s, want startedAt", s.ModifiedAt)
	}
	Chat(s, ahp.ChatTurnComplete{TurnID: "t1", Duration: 61_500})
	if s.ModifiedAt != "2026-10-02T10:01:02.500Z" {
		t.Errorf("after end modifiedAt = %s, want startedAt+duration", s.ModifiedAt)
	}
	Chat(s, ahp.ChatTruncated{})
	if s.ModifiedAt != "2026-10-02T10:01:02.500Z" {
		t.Errorf("truncate changed modifiedAt to %s", s.ModifiedAt)
	}
	Chat(s, started("t2"))
	Chat(s, ahp.ChatTurnCancelled{TurnID: "t2", Duration: -5})
	if s.ModifiedAt != "2026-10-02T10:00:01.000Z" || *s.Turns[0].Duration != 0 {
		t.Errorf("negative duration not clamped: modifiedAt %s duration %d", s.ModifiedAt, *s.Turns[0].Duration)
	}
}

// C-TURN-03: when the running turn completes it moves from activeTurn into
// turns; tool calls still in flight are cancelled with reason "skipped".
func TestTurnCompleteMovesTurnAndSkipsOpenToolCalls(t *testing.T) {
	s := newChat()
	Chat(s, started("t1"))
	Chat(s, ahp.ChatToolCallStart{TurnID: "t1", ToolCallID: "tc", ToolName: "bash", DisplayName: "Bash"})
	Chat(s, ahp.ChatToolCallReady{TurnID: "t1", ToolCallID: "tc", InvocationMessage: ahp.Plain("run ls")})
	if s.Status != ahp.StatusInputNeeded {
		t.Errorf("pending confirmation: status = %d, want InputNeeded", s.Status)
	}
	Chat(s, ahp.ChatTurnComplete{TurnID: "t1", Duration: 1})
	tc := s.Turns[0].ResponseParts[0].ToolCall
	if tc.Status != ahp.ToolCancelled || tc.Reason != ahp.CancelSkipped || tc.InvocationMessage.String() != "run ls" {
		t.Errorf("tool call = %+v", tc)
	}
	if s.Status != ahp.StatusIdle {
		t.Errorf("status = %d, want Idle", s.Status)
	}
}

func TestCreationFailedSetsLifecycleFailed(t *testing.T) {
	s := &ahp.SessionState{Lifecycle: ahp.LifecycleCreating}
	Session(s, ahp.SessionCreationFailed{Error: ahp.ErrorInfo{Message: "no such provider"}})
	if s.Lifecycle != ahp.LifecycleFailed || s.CreationError == nil || s.CreationError.Message != "no such provider" {
		t.Errorf("got lifecycle %q error %+v", s.Lifecycle, s.CreationError)
	}
}

// AHP-1.0.md §4: session/chatsReordered carries the complete order; an
// order that does not name every chat exactly once is ignored.
func TestSessionChatsReordered(t *testing.T) {
	chats := func() []ahp.ChatSummary {
		return []ahp.ChatSummary{{Resource: "ahp-chat:/a"}, {Resource: "ahp-chat:/b", Title: "B"}, {Resource: "ahp-chat:/c"}}
	}
	order := func(s *ahp.SessionState) []string {
		var out []string
		for _, c := range s.Chats {
			out = append(out, c.Resource)
		}
		return out
	}
	tests := []struct {
		name  string
		chats []ahp.URI
		want  []string
	}{
		{"complete order", []ahp.URI{"ahp-chat:/c", "ahp-chat:/a", "ahp-chat:/b"}, []string{"ahp-chat:/c", "ahp-chat:/a", "ahp-chat:/b"}},
		{"missing a chat", []ahp.URI{"ahp-chat:/c", "ahp-chat:/a"}, []string{"ahp-chat:/a", "ahp-chat:/b", "ahp-chat:/c"}},
		{"unknown chat", []ahp.URI{"ahp-chat:/c", "ahp-chat:/a", "ahp-chat:/x"}, []string{"ahp-chat:/a", "ahp-chat:/b", "ahp-chat:/c"}},
		{"duplicate", []ahp.URI{"ahp-chat:/c", "ahp-chat:/c", "ahp-chat:/a"}, []string{"ahp-chat:/a", "ahp-chat:/b", "ahp-chat:/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &ahp.SessionState{Chats: chats(), DefaultChat: "ahp-chat:/a"}
			Session(s, ahp.SessionChatsReordered{Chats: tt.chats})
			if got := order(s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
			if s.DefaultChat != "ahp-chat:/a" {
				t.Errorf("default chat changed to %q", s.DefaultChat)
			}
			if i := chatIndex(s.Chats, "ahp-chat:/b"); s.Chats[i].Title != "B" {
				t.Errorf("summary not preserved: %+v", s.Chats[i])
			}
		})
	}
}

func TestSessionChatRemovedClearsDefaultChat(t *testing.T) {
	s := &ahp.SessionState{Chats: []ahp.ChatSummary{{Resource: "ahp-chat:/a"}, {Resource: "ahp-chat:/b"}}, DefaultChat: "ahp-chat:/a"}
	Session(s, ahp.SessionChatRemoved{Chat: "ahp-chat:/a"})
	if s.DefaultChat != "" || len(s.Chats) != 1 {
		t.Errorf("got default %q chats %v", s.DefaultChat, s.Chats)
	}
}

func TestChatSummaryOfCopiesSummaryFields(t *testing.T) {
	s := newChat()
	s.Status = ahp.StatusIdle | ahp.StatusIsRead
	s.Activity = "Thinking"
	s.Origin = &ahp.ChatOrigin{Kind: ahp.OriginFork, Chat: "ahp-chat:/src", TurnID: "t3"}
	s.Interactivity = ahp.InteractivityReadOnly
	s.WorkingDirectories = []ahp.URI{"file:///w"}
	sum := ChatSummaryOf(s)
	want := ahp.ChatSummary{
		Resource: s.Resource, Title: s.Title, Status: s.Status, Activity: "Thinking", ModifiedAt: s.ModifiedAt,
		Origin: s.Origin, Interactivity: ahp.InteractivityReadOnly, WorkingDirectories: []ahp.URI{"file:///w"},
	}
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("summary = %+v\nwant %+v", sum, want)
	}
	s.Origin.Kind = ahp.OriginUser
	if sum.Origin.Kind != ahp.OriginFork {
		t.Errorf("summary shares the chat's origin")
	}
}

// The package sharing rule: reducers never write through memory taken from
// an action, so a published action can be marshalled while reduction goes on.
func TestReducersDoNotWriteThroughActionMemory(t *testing.T) {
	t.Run("chat", func(t *testing.T) {
		s := newChat()
		Chat(s, started("t1"))
		start := ahp.ChatToolCallStart{TurnID: "t1", ToolCallID: "tc", ToolName: "x", DisplayName: "X", Meta: map[string]any{"k": "v"}}
		Chat(s, start)
		ready := ahp.ChatToolCallReady{TurnID: "t1", ToolCallID: "tc", InvocationMessage: ahp.Plain("go"),
			ToolInput: ahp.ToolInputString("a"), Options: []ahp.ConfirmationOption{{ID: "ok", Label: "OK", Kind: "approve"}}}
		Chat(s, ready)
		readyJSON, _ := json.Marshal(ready)
		Chat(s, ahp.ChatToolCallConfirmed{TurnID: "t1", ToolCallID: "tc", Approved: true, SelectedOptionID: "ok", EditedToolInput: ptr("b")})
		Chat(s, ahp.ChatToolCallComplete{TurnID: "t1", ToolCallID: "tc", Result: ahp.ToolCallResult{Success: true}})
		if again, _ := json.Marshal(ready); string(again) != string(readyJSON) {
			t.Errorf("ready action changed:\n%s\n%s", readyJSON, again)
		}
		if start.Meta["k"] != "v" || len(start.Meta) != 1 {
			t.Errorf("start action meta changed: %v", start.Meta)
		}
	})
	t.Run("session customizations", func(t *testing.T) {
		var custs []ahp.Customization
		_ = json.Unmarshal([]byte(`[{"type":"plugin","id":"p","enabled":true,"children":[{"type":"skill","id":"s"}]}]`), &custs)
		changed := ahp.SessionCustomizationsChanged{Customizations: custs}
		before, _ := json.Marshal(changed)
		s := &ahp.SessionState{}
		Session(s, changed)
		Session(s, ahp.SessionCustomizationToggled{ID: "p", Enabled: ptr(false)})
		Session(s, ahp.SessionCustomizationToggled{ID: "s", Enabled: ptr(false)})
		Session(s, ahp.SessionCustomizationRemoved{ID: "s"})
		if after, _ := json.Marshal(changed); string(after) != string(before) {
			t.Errorf("action changed:\n%s\n%s", before, after)
		}
		got, _ := json.Marshal(s.Customizations)
		if want := `[{"children":[],"enabled":false,"id":"p","type":"plugin"}]`; string(got) != want {
			t.Errorf("state = %s, want %s", got, want)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// Unknown actions are no-ops on every reducer.
func TestUnknownActionIsNoOp(t *testing.T) {
	u := ahp.UnknownAction{Type: "future/thing", Raw: json.RawMessage(`{"type":"future/thing"}`)}
	c := newChat()
	before, _ := json.Marshal(c)
	Chat(c, u)
	Chat(c, ahp.SessionTitleChanged{Title: "not a chat action"})
	if after, _ := json.Marshal(c); string(after) != string(before) {
		t.Errorf("chat changed: %s", after)
	}
	r := &ahp.RootState{}
	Root(r, u)
	if r.Agents != nil {
		t.Errorf("root changed")
	}
	s := &ahp.SessionState{Title: "x"}
	Session(s, u)
	if s.Title != "x" {
		t.Errorf("session changed")
	}
}
