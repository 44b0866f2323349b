package automation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Limits of the catalogue. The run history limit is what initialize's
// automations capability advertises (runHistoryLimit): the terminal runs
// kept per automation; a run in flight is not counted.
const (
	MaxAutomations  = 100
	RunHistoryLimit = 50
	// MaxDefinitionBytes bounds one definition as JSON (its message text
	// above all).
	MaxDefinitionBytes = 256 << 10
	// MaxTriggers bounds the triggers of one definition.
	MaxTriggers = 16
)

// The root config keys that gate automations, as VS Code's host names them
// (src/vs/platform/agentHost/common/automationMigration.ts).
const (
	EnabledKey   = "automationsEnabled"
	MigrationKey = "vscode.automationMigration"
)

// The gates' refusals, worded as VS Code's host words them (the suite
// matches them).
const (
	MigrationRequired = "Automation migration must complete before automations can be accessed or run."
	Disabled          = "Automations are disabled."
)

// Gates are the two root config switches a host's automations stand
// behind: the enablement flag, and the one-way record that the client has
// finished moving its own automations to the host (VS Code's migration).
type Gates struct {
	Enabled  bool
	Migrated bool
}

// Access is why the catalogue may not be changed or its history read now
// ("" when it may): migration comes first.
func (g Gates) Access() string {
	if !g.Migrated {
		return MigrationRequired
	}
	return ""
}

// Run is why nothing may be run (or trigger types listed) now ("" when it
// may): the migration gate is checked before the enablement gate.
func (g Gates) Run() string {
	if r := g.Access(); r != "" {
		return r
	}
	if !g.Enabled {
		return Disabled
	}
	return ""
}

// Operations are what an entry advertises under g: it may always be
// updated and removed; it may be run while both gates are open.
func (g Gates) Operations() []string {
	if g.Run() == "" {
		return []string{ahp.AutomationOpUpdate, ahp.AutomationOpRemove, ahp.AutomationOpRun}
	}
	return []string{ahp.AutomationOpUpdate, ahp.AutomationOpRemove}
}

// ValidMigration reports whether v is a completed migration record:
// {version: 1, status: "complete", resources: [distinct strings]}.
func ValidMigration(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || m["version"] != float64(1) || m["status"] != "complete" {
		return false
	}
	list, ok := m["resources"].([]any)
	if !ok {
		return false
	}
	seen := map[string]bool{}
	for _, r := range list {
		s, ok := r.(string)
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

// ConfigChange is what a root/configChanged patch does to the gates, or
// why it is refused. Keys other than the gates' are not automations'
// business and pass through unchecked.
func ConfigChange(cur Gates, patch map[string]any, replace bool) (Gates, string) {
	next := cur
	if replace {
		next.Enabled = false // a replacement without the key turns it off
	}
	if v, ok := patch[EnabledKey]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return cur, fmt.Sprintf("%s must be true or false.", EnabledKey)
		}
		next.Enabled = b
	}
	v, ok := patch[MigrationKey]
	if !ok {
		if replace && cur.Migrated {
			// A replacement without the record would drop it.
			return cur, fmt.Sprintf("%s cannot be removed: migration cannot be undone.", MigrationKey)
		}
		return next, ""
	}
	switch {
	case len(patch) != 1:
		return cur, fmt.Sprintf("%s must be changed on its own.", MigrationKey)
	case !ValidMigration(v):
		return cur, fmt.Sprintf("%s must be {version: 1, status: \"complete\", resources: [...]}; migration cannot be undone.", MigrationKey)
	case !cur.Enabled:
		return cur, "Automation migration cannot complete while automations are disabled."
	}
	next.Migrated = true
	return next, ""
}

// Validate checks a definition before it is stored; the error says what
// is wrong with it.
func Validate(def ahp.AutomationDefinition) error {
	if strings.TrimSpace(def.Title) == "" {
		return fmt.Errorf("definition.title: required")
	}
	if def.Message.Origin.Kind != ahp.MessageFromAutomation {
		return fmt.Errorf("definition.message.origin.kind: must be %q", ahp.MessageFromAutomation)
	}
	if len(def.Message.Attachments) > 0 {
		// A run starts when nobody is connected to hand their bytes over,
		// and would read what they name as the owner long after: refused.
		return fmt.Errorf("definition.message.attachments: an automation's message carries none")
	}
	if raw, err := json.Marshal(def); err != nil || len(raw) > MaxDefinitionBytes {
		return fmt.Errorf("definition: larger than %d bytes", MaxDefinitionBytes)
	}
	if len(def.Triggers) > MaxTriggers {
		return fmt.Errorf("definition.triggers: at most %d", MaxTriggers)
	}
	ids := map[string]bool{}
	for i, t := range def.Triggers {
		if t.ID == "" || ids[t.ID] {
			return fmt.Errorf("definition.triggers[%d].id: required and unique", i)
		}
		ids[t.ID] = true
		switch t.Kind {
		case ahp.TriggerSchedule:
			if t.Schedule == nil {
				return fmt.Errorf("definition.triggers[%d].schedule: required", i)
			}
			if _, err := ParseSchedule(t.Schedule.Expression, t.Schedule.TimeZone); err != nil {
				return fmt.Errorf("definition.triggers[%d]: %w", i, err)
			}
			if p := t.MisfirePolicy; p != "" && p != ahp.MisfireSkip && p != ahp.MisfireRunOnce {
				return fmt.Errorf("definition.triggers[%d].misfirePolicy: %q is neither skip nor runOnce", i, p)
			}
		case ahp.TriggerEvent:
			return fmt.Errorf("definition.triggers[%d]: this host defines no event trigger type %q", i, t.Type)
		default:
			return fmt.Errorf("definition.triggers[%d].kind: %q is neither schedule nor event", i, t.Kind)
		}
	}
	return nil
}

// Apply returns def with patch's fields replaced.
func Apply(def ahp.AutomationDefinition, patch ahp.AutomationDefinitionPatch) ahp.AutomationDefinition {
	if patch.Title != nil {
		def.Title = *patch.Title
	}
	if patch.Message != nil {
		def.Message = *patch.Message
	}
	if patch.Session != nil {
		def.Session = *patch.Session
	}
	if patch.Enabled != nil {
		def.Enabled = *patch.Enabled
	}
	if patch.Triggers != nil {
		def.Triggers = patch.Triggers
	}
	if patch.Meta != nil {
		def.Meta = patch.Meta
	}
	return def
}

// Same reports whether two definitions are the same definition (as JSON:
// a repeated create of it is no change).
func Same(a, b ahp.AutomationDefinition) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ra) == string(rb)
}

// NextRun is the earliest next occurrence, strictly after t, of def's
// schedule triggers; zero when def has none or is not enabled (only
// enabled automations run on their own).
func NextRun(def ahp.AutomationDefinition, t time.Time) time.Time {
	var next time.Time
	if !def.Enabled {
		return next
	}
	for _, tr := range def.Triggers {
		if tr.Kind != ahp.TriggerSchedule || tr.Schedule == nil {
			continue
		}
		s, err := ParseSchedule(tr.Schedule.Expression, tr.Schedule.TimeZone)
		if err != nil {
			continue
		}
		if n := s.Next(t); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// LateAfter is how late a due occurrence may be found and still count as
// on time: the scheduler looks every few seconds, so an occurrence older
// than this was missed (the daemon was down, or the machine asleep).
const LateAfter = 2 * time.Minute

// Fire is what the scheduler does with one trigger at now.
type Fire struct {
	// Run: start a run for this trigger.
	Run bool
	// ScheduledFor is the occurrence the run is for; CatchUp marks a run
	// for occurrences that were missed.
	ScheduledFor time.Time
	CatchUp      bool
}

// Due decides, for a schedule trigger whose earliest unevaluated
// occurrence is due (at or before now), whether to run it. An occurrence
// found within LateAfter runs as scheduled. Occurrences missed for
// longer (the daemon was down) follow the trigger's misfire policy: skip
// drops them all; runOnce (the default) makes one catch-up run for the
// latest of them, however many there were. When the latest occurrence
// is on time, it runs as scheduled and covers any older misses. busy (a run of the automation
// is still in flight) drops the occurrence: one run at a time.
func Due(s Schedule, policy string, due, now time.Time, busy bool) Fire {
	if due.After(now) || busy {
		return Fire{}
	}
	latest := due
	for n := s.Next(latest); !n.IsZero() && !n.After(now); n = s.Next(n) {
		latest = n
	}
	if now.Sub(latest) <= LateAfter {
		// On time (older misses, if any, are covered by this run).
		return Fire{Run: true, ScheduledFor: latest}
	}
	if policy == ahp.MisfireSkip {
		return Fire{}
	}
	return Fire{Run: true, ScheduledFor: latest, CatchUp: true}
}
