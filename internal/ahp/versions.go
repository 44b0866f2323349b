package ahp

import (
	"strconv"
	"strings"
)

// ProtocolVersion is the AHP version ahpd implements.
const ProtocolVersion = "1.0.0"

// SupportedVersions lists the versions ahpd accepts, newest first. "0.10.0"
// is the pre-release name of the 1.0 contract (AHP-1.0.md "What changed" 1);
// "0.9.0" clients get everything except the 0.10.0 actions and the 1.0
// summary fields (AHP-1.0.md §11, §13).
var SupportedVersions = []string{"1.0.0", "0.10.0", "0.9.0"}

// Negotiate picks the protocol version to speak from the client's offer
// (most preferred first). It returns the first offered string ahpd accepts,
// exactly as offered, so the client's order wins: any 1.0.x, 0.10.x or
// 0.9.x. ok is false when none is acceptable (answer -32005 with
// SupportedVersions).
func Negotiate(offered []string) (version string, ok bool) {
	for _, v := range offered {
		if accepted(v) {
			return v, true
		}
	}
	return "", false
}

func accepted(v string) bool {
	major, minor, _, ok := parseVersion(v)
	if !ok {
		return false
	}
	switch {
	case major == 1 && minor == 0:
		return true
	case major == 0 && (minor == 10 || minor == 9):
		return true
	}
	return false
}

// parseVersion reads "MAJOR.MINOR.PATCH" with an optional "-pre" or "+build"
// suffix.
func parseVersion(v string) (major, minor, patch int, ok bool) {
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return 0, 0, 0, false
		}
		n[i] = x
	}
	return n[0], n[1], n[2], true
}

// compareVersions orders two versions; unparsable versions sort first.
func compareVersions(a, b string) int {
	am, an, ap, aok := parseVersion(a)
	bm, bn, bp, bok := parseVersion(b)
	switch {
	case !aok && !bok:
		return 0
	case !aok:
		return -1
	case !bok:
		return 1
	}
	for _, d := range [3]int{am - bm, an - bn, ap - bp} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// ActionIntroducedIn maps every root/session/chat/canvas action type to the
// protocol version that introduced it (AHP-1.0.md §11, registry at
// [C0924]; chat/isReadChanged is "0.9.0", unconfirmed).
var ActionIntroducedIn = map[string]string{
	ActionRootAgentsChanged:                   "0.1.0",
	ActionRootActiveSessionsChanged:           "0.1.0",
	ActionRootTerminalsChanged:                "0.1.0",
	ActionRootConfigChanged:                   "0.1.0",
	ActionSessionReady:                        "0.1.0",
	ActionSessionCreationFailed:               "0.1.0",
	ActionSessionTitleChanged:                 "0.1.0",
	ActionSessionServerToolsChanged:           "0.1.0",
	ActionSessionCustomizationsChanged:        "0.1.0",
	ActionSessionCustomizationToggled:         "0.1.0",
	ActionSessionCustomizationUpdated:         "0.1.0",
	ActionSessionIsReadChanged:                "0.1.0",
	ActionSessionIsArchivedChanged:            "0.1.0",
	ActionSessionActivityChanged:              "0.1.0",
	ActionSessionConfigChanged:                "0.1.0",
	ActionSessionMetaChanged:                  "0.1.0",
	ActionSessionCustomizationRemoved:         "0.2.0",
	ActionSessionChangesetsChanged:            "0.2.0",
	ActionSessionMcpServerStateChanged:        "0.3.0",
	ActionSessionChatAdded:                    "0.4.0",
	ActionSessionChatRemoved:                  "0.4.0",
	ActionSessionChatUpdated:                  "0.4.0",
	ActionSessionDefaultChatChanged:           "0.4.0",
	ActionChatTurnStarted:                     "0.4.0",
	ActionChatDelta:                           "0.4.0",
	ActionChatResponsePart:                    "0.4.0",
	ActionChatToolCallStart:                   "0.4.0",
	ActionChatToolCallDelta:                   "0.4.0",
	ActionChatToolCallReady:                   "0.4.0",
	ActionChatToolCallConfirmed:               "0.4.0",
	ActionChatToolCallComplete:                "0.4.0",
	ActionChatToolCallResultConfirmed:         "0.4.0",
	ActionChatToolCallContentChanged:          "0.4.0",
	ActionChatTurnComplete:                    "0.4.0",
	ActionChatTurnCancelled:                   "0.4.0",
	ActionChatError:                           "0.4.0",
	ActionChatUsage:                           "0.4.0",
	ActionChatReasoning:                       "0.4.0",
	ActionChatPendingMessageSet:               "0.4.0",
	ActionChatPendingMessageRemoved:           "0.4.0",
	ActionChatQueuedMessagesReordered:         "0.4.0",
	ActionChatInputRequested:                  "0.4.0",
	ActionChatInputAnswerChanged:              "0.4.0",
	ActionChatInputCompleted:                  "0.4.0",
	ActionChatTruncated:                       "0.4.0",
	ActionSessionActiveClientSet:              "0.5.0",
	ActionSessionActiveClientRemoved:          "0.5.0",
	ActionChatActivityChanged:                 "0.5.0",
	ActionChatDraftChanged:                    "0.5.0",
	ActionSessionInputNeededSet:               "0.5.1",
	ActionSessionInputNeededRemoved:           "0.5.1",
	ActionChatTurnsLoaded:                     "0.5.1",
	ActionSessionMcpServerStartRequested:      "0.5.2",
	ActionSessionMcpServerStopRequested:       "0.5.2",
	ActionChatToolCallAuthRequired:            "0.6.0",
	ActionChatToolCallAuthResolved:            "0.6.0",
	ActionSessionWorkingDirectorySet:          "0.7.0",
	ActionSessionWorkingDirectoryRemoved:      "0.7.0",
	ActionChatWorkingDirectorySet:             "0.7.0",
	ActionChatWorkingDirectoryRemoved:         "0.7.0",
	ActionSessionWorkingDirectoryReplaced:     "0.8.0",
	ActionSessionChatsReordered:               "0.9.0",
	ActionSessionMcpServerBackgroundRequested: "0.9.0",
	ActionChatTurnResume:                      "0.9.0",
	ActionChatBackgroundWorkSet:               "0.9.0",
	ActionChatBackgroundWorkRemoved:           "0.9.0",
	ActionChatMovableChanged:                  "0.9.0",
	ActionChatChangesetsChanged:               "0.9.0",
	ActionChatIsArchivedChanged:               "0.9.0",
	ActionChatIsReadChanged:                   "0.9.0",
	ActionChatCanvasesChanged:                 "0.10.0",
	ActionCanvasStateChanged:                  "0.10.0",
}

// Server→client notification methods.
const (
	NotifyAction                = "action"
	NotifySessionAdded          = "root/sessionAdded"
	NotifySessionRemoved        = "root/sessionRemoved"
	NotifySessionSummaryChanged = "root/sessionSummaryChanged"
	NotifyProgress              = "root/progress"
	NotifyAuthRequired          = "auth/required"
)

// NotificationIntroducedIn maps protocol notifications to the version that
// introduced them (AHP-1.0.md §11).
var NotificationIntroducedIn = map[string]string{
	NotifySessionAdded:          "0.1.0",
	NotifySessionRemoved:        "0.1.0",
	NotifySessionSummaryChanged: "0.1.0",
	NotifyAuthRequired:          "0.1.0",
	"otlp/exportLogs":           "0.2.0",
	"otlp/exportTraces":         "0.2.0",
	"otlp/exportMetrics":        "0.2.0",
	NotifyProgress:              "0.5.0",
}

// ActionKnownTo reports whether a connection that negotiated version may be
// sent actions of actionType: the action's introducing version must not be
// newer (isActionKnownToVersion, AHP-1.0.md §11). Action types missing from
// ActionIntroducedIn are never sent.
func ActionKnownTo(actionType, version string) bool {
	introduced, ok := ActionIntroducedIn[actionType]
	if !ok {
		return false
	}
	return compareVersions(introduced, version) <= 0
}

// SummaryChatsKnownTo reports whether SessionSummary.chats/defaultChat (1.0
// additions) may be sent to a connection at version (AHP-1.0.md §6).
func SummaryChatsKnownTo(version string) bool {
	return compareVersions("0.10.0", version) <= 0
}

// clientDispatchable is the 1.0 client-dispatchable set (AHP-1.0.md §12).
var clientDispatchable = map[string]bool{
	ActionRootConfigChanged: true,

	ActionSessionTitleChanged:                 true,
	ActionSessionActiveClientSet:              true,
	ActionSessionActiveClientRemoved:          true,
	ActionSessionWorkingDirectorySet:          true,
	ActionSessionWorkingDirectoryRemoved:      true,
	ActionSessionWorkingDirectoryReplaced:     true,
	ActionSessionCustomizationToggled:         true,
	ActionSessionMcpServerStartRequested:      true,
	ActionSessionMcpServerStopRequested:       true,
	ActionSessionMcpServerBackgroundRequested: true,
	ActionSessionIsReadChanged:                true,
	ActionSessionIsArchivedChanged:            true,
	ActionSessionConfigChanged:                true,

	ActionChatTurnStarted:             true,
	ActionChatToolCallConfirmed:       true,
	ActionChatToolCallComplete:        true,
	ActionChatToolCallResultConfirmed: true,
	ActionChatToolCallContentChanged:  true,
	ActionChatTurnCancelled:           true,
	ActionChatTurnResume:              true,
	ActionChatWorkingDirectorySet:     true,
	ActionChatWorkingDirectoryRemoved: true,
	ActionChatPendingMessageSet:       true,
	ActionChatPendingMessageRemoved:   true,
	ActionChatQueuedMessagesReordered: true,
	ActionChatDraftChanged:            true,
	ActionChatIsArchivedChanged:       true,
	ActionChatIsReadChanged:           true,
	ActionChatInputAnswerChanged:      true,
	ActionChatInputCompleted:          true,
	ActionChatTruncated:               true,
}

// IsClientDispatchable reports whether a client may dispatch actionType
// (AHP-1.0.md §12). Unknown types are not dispatchable.
func IsClientDispatchable(actionType string) bool { return clientDispatchable[actionType] }
