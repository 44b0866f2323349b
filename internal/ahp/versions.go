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
	// By hand, not strings.Split: every published action asks it for
	// every subscriber (ActionKnownTo), and the split allocated each time.
	var n [3]int
	for i := range n {
		end := strings.IndexByte(v, '.')
		if i == len(n)-1 {
			if end >= 0 {
				return 0, 0, 0, false
			}
			end = len(v)
		} else if end < 0 {
			return 0, 0, 0, false
		}
		x, err := strconv.Atoi(v[:end])
		if err != nil || x < 0 {
			return 0, 0, 0, false
		}
		n[i] = x
		v = v[min(end+1, len(v)):]
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

// IsClientDispatchable reports whether a client may dispatch actionType
// (AHP-1.0.md §12). Unknown types are not dispatchable.
func IsClientDispatchable(actionType string) bool { return clientDispatchable[actionType] }

// GrantFor is the grant a client needs to dispatch actionType, "" when it
// needs none beyond being connected (actions.table).
func GrantFor(actionType string) string { return actionGrants[actionType] }
