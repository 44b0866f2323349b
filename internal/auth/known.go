package auth

import (
	"sort"
	"strings"
)

// Known reports whether grant is one a token may carry in the config: "*",
// "<subject>:*" of a known subject, a group, or a known operation. The
// daemon refuses a config naming any other (a typo would silently grant
// nothing).
func Known(grant string) bool {
	if grant == "*" {
		return true
	}
	if _, ok := groups[grant]; ok {
		return true
	}
	subject, op, ok := strings.Cut(grant, ":")
	if !ok {
		return false
	}
	for _, g := range KnownGrants() {
		s, _, _ := strings.Cut(g, ":")
		if g == grant || (op == "*" && s == subject) {
			return true
		}
	}
	return false
}

// ungrouped are grants no group covers; a new one is added here.
var ungrouped = []string{ResourceRead, ResourceWrite, ResourceClients, TerminalRead, TerminalWrite, HostDiagnose, HostLogs, AutomationRead, AutomationWrite, AutomationRun, ChangesetCommit, HostWorktrees, SessionClone}

// KnownGrants lists the grants Known accepts (besides "*" and
// "<subject>:*"), sorted: every group, every grant a group covers, and
// the ungrouped ones.
func KnownGrants() []string {
	seen := map[string]bool{}
	for _, g := range ungrouped {
		seen[g] = true
	}
	for g, members := range groups {
		seen[g] = true
		for _, m := range members {
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}
