package ahp

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeActionKnowsEveryActionType(t *testing.T) {
	types := KnownActionTypes()
	if len(types) != len(ActionIntroducedIn) {
		t.Errorf("%d decodable action types, %d in ActionIntroducedIn", len(types), len(ActionIntroducedIn))
	}
	for _, typ := range types {
		if _, ok := ActionIntroducedIn[typ]; !ok {
			t.Errorf("%s has no ActionIntroducedIn entry", typ)
		}
		a, err := DecodeAction(json.RawMessage(`{"type":"` + typ + `"}`))
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		if _, unknown := a.(UnknownAction); unknown || a.ActionType() != typ {
			t.Errorf("%s decoded as %T (%s)", typ, a, a.ActionType())
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Errorf("%s: marshal: %v", typ, err)
			continue
		}
		if !strings.HasPrefix(string(b), `{"type":"`+typ+`"`) {
			t.Errorf("%s marshals without its type first: %s", typ, b)
		}
	}
}

// Round-trip fixture 002: an unknown action type is kept byte for byte.
func TestDecodeActionPreservesUnknownType(t *testing.T) {
	raw := json.RawMessage(`{"type":"future/newAction",  "foo":42}`)
	a, err := DecodeAction(raw)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := a.(UnknownAction)
	if !ok || u.Type != "future/newAction" {
		t.Fatalf("got %#v", a)
	}
	b, _ := json.Marshal(u)
	if string(b) != `{"type":"future/newAction","foo":42}` { // json.Marshal compacts
		t.Errorf("re-encoded %s", b)
	}
	if string(u.Raw) != string(raw) {
		t.Errorf("raw = %s", u.Raw)
	}
}

func TestDecodeActionRejectsMalformedInput(t *testing.T) {
	tests := []struct {
		raw, mention string
	}{
		{`{"type":`, "action"},
		{`[1,2]`, "action"},
		{`{"turnId":"t1"}`, "action.type"},
		{`{"type":""}`, "action.type"},
		{`{"type":"chat/delta","turnId":5}`, "chat/delta"},
	}
	for _, tt := range tests {
		_, err := DecodeAction(json.RawMessage(tt.raw))
		if !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: err = %v, want ErrInvalidParams", tt.raw, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s: %q does not name %q", tt.raw, err, tt.mention)
		}
	}
}

func TestActionsRoundTrip(t *testing.T) {
	cursor := "c2"
	actions := []Action{
		ChatTurnStarted{TurnID: "t1", StartedAt: "2026-10-02T10:00:00Z", Message: Message{Text: "hi", Origin: MessageOrigin{Kind: "user"}}, QueuedMessageID: "q1"},
		ChatDelta{TurnID: "t1", PartID: "p1", Content: "x"},
		ChatResponsePart{TurnID: "t1", Part: MarkdownPart("p1", "")},
		ChatTurnComplete{TurnID: "t1", Duration: 0},
		ChatError{TurnID: "t1", Duration: 5, Part: ErrorPart(ErrorInfo{ErrorType: "provider", Message: "503"}, true)},
		ChatTurnResume{TurnID: "t1"},
		ChatPendingMessageSet{Kind: PendingQueued, ID: "q1", Message: Message{Text: "next", Origin: MessageOrigin{Kind: "user"}}},
		ChatQueuedMessagesReordered{Order: []string{"b", "a"}},
		ChatTruncated{},
		ChatTurnsLoaded{Turns: []Turn{}, TurnsNextCursor: &cursor},
		ChatToolCallReady{TurnID: "t1", ToolCallID: "tc", InvocationMessage: MarkdownText("**run**"), ToolInput: ToolInputString("ls"), Confirmed: ConfirmedNotNeeded},
		ChatToolCallComplete{TurnID: "t1", ToolCallID: "tc", Result: ToolCallResult{Success: true, Content: []ToolResultContent{TextContent("")}}},
		ChatIsReadChanged{IsRead: false},
		SessionChatAdded{Summary: ChatSummary{Resource: "ahp-chat:/c", Title: "C", Status: StatusIdle, ModifiedAt: "x",
			Origin: &ChatOrigin{Kind: OriginSideChat, Chat: "ahp-chat:/m", TurnID: "t", Selection: &ChatSelection{Text: "sel"}}}},
		SessionChatUpdated{Chat: "ahp-chat:/c", Changes: PartialChatSummary{Title: ptr("T"), Status: ptr(StatusInputNeeded)}},
		SessionDefaultChatChanged{},
		SessionReady{},
		RootActiveSessionsChanged{ActiveSessions: 0},
	}
	for _, a := range actions {
		b, err := json.Marshal(a)
		if err != nil {
			t.Errorf("%s: %v", a.ActionType(), err)
			continue
		}
		back, err := DecodeAction(b)
		if err != nil {
			t.Errorf("%s: decode %s: %v", a.ActionType(), b, err)
			continue
		}
		if !reflect.DeepEqual(back, a) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v\njson %s", a.ActionType(), back, a, b)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// AHP-1.0.md "What changed" 9: duration is required on the turn-ending
// actions, so a zero duration is still written.
func TestTurnEndingActionsAlwaysCarryDuration(t *testing.T) {
	for _, a := range []Action{ChatTurnComplete{TurnID: "t"}, ChatTurnCancelled{TurnID: "t"}, ChatError{TurnID: "t", Part: ErrorPart(ErrorInfo{Message: "m"}, false)}} {
		b, _ := json.Marshal(a)
		if !strings.Contains(string(b), `"duration":0`) {
			t.Errorf("%s: %s has no duration", a.ActionType(), b)
		}
	}
}

func TestActionEnvelopeRoundTrip(t *testing.T) {
	env := ActionEnvelope{
		Channel:         "ahp-chat:/c1",
		Action:          ChatTurnCancelled{TurnID: "t1", Duration: 3},
		ServerSeq:       2148131814,
		Origin:          &ActionOrigin{ClientID: "c", ClientSeq: 9},
		RejectionReason: "no active turn",
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"channel":"ahp-chat:/c1","action":{"type":"chat/turnCancelled","turnId":"t1","duration":3},"serverSeq":2148131814,"origin":{"clientId":"c","clientSeq":9},"rejectionReason":"no active turn"}`
	if string(b) != want {
		t.Errorf("encoded %s\nwant    %s", b, want)
	}
	var back ActionEnvelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, env) {
		t.Errorf("round trip %#v", back)
	}
	if err := json.Unmarshal([]byte(`{"channel":"x","serverSeq":1}`), &back); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("envelope without action: %v", err)
	}
}

func TestResponsePartWireShapes(t *testing.T) {
	tests := []struct {
		part ResponsePart
		want string
	}{
		{MarkdownPart("p", ""), `{"kind":"markdown","id":"p","content":""}`},
		{ReasoningPart("r", "why"), `{"kind":"reasoning","id":"r","content":"why"}`},
		{SystemNotificationPart("done", map[string]any{"k": 1}), `{"kind":"systemNotification","content":"done","_meta":{"k":1}}`},
		{ErrorPart(ErrorInfo{Message: "m"}, false), `{"kind":"error","error":{"message":"m"}}`},
		{ErrorPart(ErrorInfo{ErrorType: "t", Message: "m"}, true), `{"kind":"error","error":{"errorType":"t","message":"m"},"resumable":true}`},
		{ToolCallPart(&ToolCallState{Status: ToolCompleted, ToolCallID: "tc", ToolName: "n", DisplayName: "N", Success: ptr(false), PastTenseMessage: Plain("")}),
			`{"kind":"toolCall","toolCall":{"status":"completed","toolCallId":"tc","toolName":"n","displayName":"N","success":false,"pastTenseMessage":""}}`},
		{ResponsePart{Kind: PartContentRef, URI: "file:///x", SizeHint: ptr(int64(0))}, `{"kind":"contentRef","uri":"file:///x","sizeHint":0}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.part)
		if err != nil {
			t.Errorf("%s: %v", tt.part.Kind, err)
			continue
		}
		if string(b) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.part.Kind, b, tt.want)
		}
		var back ResponsePart
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: decode: %v", tt.part.Kind, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != tt.want {
			t.Errorf("%s: re-encoded %s", tt.part.Kind, again)
		}
	}
	// A kind from a newer protocol survives unchanged.
	future := `{"kind":"canvasRef","resource":"ahp-canvas:/k","x":[1]}`
	var p ResponsePart
	if err := json.Unmarshal([]byte(future), &p); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(p); string(b) != future {
		t.Errorf("unknown kind re-encoded as %s", b)
	}
}

func TestStringOrMarkdownForms(t *testing.T) {
	for _, raw := range []string{`"plain"`, `{"markdown":"# t"}`} {
		var s StringOrMarkdown
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(s); string(b) != raw {
			t.Errorf("%s re-encoded as %s", raw, b)
		}
	}
}

func TestSessionStatusBits(t *testing.T) {
	s := StatusInputNeeded | StatusIsRead | 1<<31
	if got := s.WithActivity(StatusIdle); got != StatusIdle|StatusIsRead|1<<31 {
		t.Errorf("WithActivity = %d", got)
	}
	if !s.Has(StatusInProgress) || s.Has(StatusIsArchived) {
		t.Errorf("Has is wrong for %d", s)
	}
	if got := s.With(StatusIsRead, false); got != StatusInputNeeded|1<<31 {
		t.Errorf("With = %d", got)
	}
}

// AHP-1.0.md §7: older VS Code sends a source without kind; it is a fork.
func TestChatSourceWithoutKindIsFork(t *testing.T) {
	var src ChatSource
	if err := json.Unmarshal([]byte(`{"chat":"ahp-chat:/m","turnId":"t3"}`), &src); err != nil {
		t.Fatal(err)
	}
	if src.EffectiveKind() != SourceFork {
		t.Errorf("kind = %q", src.EffectiveKind())
	}
	src.Kind = SourceSideChat
	if src.EffectiveKind() != SourceSideChat {
		t.Errorf("kind = %q", src.EffectiveKind())
	}
}

// AHP-1.0.md §13: 1.0.0 and 0.10.0 are one contract, 0.9.x is accepted, and
// the answer is the first acceptable offer, as offered.
func TestNegotiate(t *testing.T) {
	tests := []struct {
		offered []string
		want    string
		ok      bool
	}{
		{[]string{"1.0.0"}, "1.0.0", true},
		{[]string{"0.10.0", "0.9.0", "0.8.0"}, "0.10.0", true},
		{[]string{"1.1.0", "1.0.0"}, "1.0.0", true},
		{[]string{"0.9.0", "1.0.0"}, "0.9.0", true},
		{[]string{"1.0.2"}, "1.0.2", true},
		{[]string{"0.9.1"}, "0.9.1", true},
		{[]string{"0.8.0", "0.7.0"}, "", false},
		{[]string{"2.0.0", "1.1.0"}, "", false},
		{[]string{">=1.0.0", "1.0"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		got, ok := Negotiate(tt.offered)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Negotiate(%v) = %q, %v; want %q, %v", tt.offered, got, ok, tt.want, tt.ok)
		}
	}
	for _, v := range SupportedVersions {
		if got, ok := Negotiate([]string{v}); !ok || got != v {
			t.Errorf("supported version %s not accepted", v)
		}
	}
}

// AHP-1.0.md §11: send an action only when introducedIn <= negotiated.
func TestActionKnownTo(t *testing.T) {
	tests := []struct {
		action, version string
		want            bool
	}{
		{ActionChatCanvasesChanged, "0.9.0", false},
		{ActionChatCanvasesChanged, "0.10.0", true},
		{ActionCanvasStateChanged, "1.0.0", true},
		{ActionChatTurnResume, "0.9.0", true},
		{ActionChatIsReadChanged, "0.9.0", true},
		{ActionChatTurnResume, "0.8.0", false},
		{ActionSessionWorkingDirectoryReplaced, "0.9.0", true},
		{ActionRootAgentsChanged, "0.9.0", true},
		{"future/thing", "1.0.0", false},
	}
	for _, tt := range tests {
		if got := ActionKnownTo(tt.action, tt.version); got != tt.want {
			t.Errorf("ActionKnownTo(%s, %s) = %v", tt.action, tt.version, got)
		}
	}
	if SummaryChatsKnownTo("0.9.0") || !SummaryChatsKnownTo("0.10.0") || !SummaryChatsKnownTo("1.0.0") {
		t.Errorf("SummaryChatsKnownTo is wrong")
	}
}

// AHP-1.0.md §12: the 1.0 client-dispatchable set.
func TestIsClientDispatchable(t *testing.T) {
	yes := []string{ActionRootConfigChanged, ActionSessionTitleChanged, ActionSessionWorkingDirectoryReplaced,
		ActionSessionMcpServerBackgroundRequested, ActionChatTurnStarted, ActionChatTurnResume, ActionChatIsReadChanged,
		ActionChatIsArchivedChanged, ActionChatTruncated, ActionChatDraftChanged, ActionChatToolCallComplete}
	no := []string{ActionRootAgentsChanged, ActionSessionDefaultChatChanged, ActionSessionChatsReordered, ActionSessionChatAdded,
		ActionChatError, ActionChatTurnComplete, ActionChatDelta, ActionChatBackgroundWorkSet, ActionChatMovableChanged,
		ActionChatChangesetsChanged, ActionChatCanvasesChanged, ActionCanvasStateChanged, "future/thing"}
	for _, a := range yes {
		if !IsClientDispatchable(a) {
			t.Errorf("%s should be client-dispatchable", a)
		}
	}
	for _, a := range no {
		if IsClientDispatchable(a) {
			t.Errorf("%s should be server-only", a)
		}
	}
	for a := range clientDispatchable {
		if _, ok := ActionIntroducedIn[a]; !ok {
			t.Errorf("dispatchable %s is not a known action", a)
		}
	}
}

func TestRequiredArraysAreWrittenEmpty(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{ChatState{Resource: "r", Title: "t", Status: 1, ModifiedAt: "m"}, `"turns":[]`},
		{Turn{ID: "t", State: TurnComplete}, `"responseParts":[]`},
		{ActiveTurn{ID: "t"}, `"responseParts":[]`},
		{SessionState{}, `"activeClients":[],"chats":[]`},
		{RootState{}, `"agents":[]`},
		{AgentInfo{}, `"models":[]`},
		{ListSessionsResult{}, `"items":[]`},
		{InitializeResult{}, `"snapshots":[]`},
		{ReconnectResult{Type: ReconnectReplay}, `"actions":[]`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tt.want) {
			t.Errorf("%T: %s lacks %s", tt.v, b, tt.want)
		}
	}
}
