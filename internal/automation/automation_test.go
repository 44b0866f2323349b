package automation

import (
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestScheduleNextFollowsTheCronGrammar(t *testing.T) {
	for _, tc := range []struct {
		expr, zone, after, want string
	}{
		{"30 9 * * 1-5", "UTC", "2026-12-04T10:00:00Z", "2026-12-07T09:30:00Z"}, // Friday after 9:30: Monday
		{"30 9 * * 1-5", "UTC", "2026-12-07T09:29:59Z", "2026-12-07T09:30:00Z"},
		{"30 9 * * 1-5", "UTC", "2026-12-07T09:30:00Z", "2026-12-08T09:30:00Z"}, // strictly after
		{"*/15 * * * *", "UTC", "2026-12-05T10:07:00Z", "2026-12-05T10:15:00Z"},
		{"0 0 1 JAN *", "UTC", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"0 12 * * sun", "UTC", "2026-12-05T13:00:00Z", "2026-12-06T12:00:00Z"},
		{"0 12 * * 7", "UTC", "2026-12-05T13:00:00Z", "2026-12-06T12:00:00Z"}, // 7 is Sunday too
		{"0 8 * * *", "Europe/Berlin", "2026-12-05T08:00:00Z", "2026-12-06T07:00:00Z"},
		{"0 0 13 * 5", "UTC", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z"}, // both days restricted: either matches
		{"1-30/10 0 * * *", "UTC", "2026-12-05T00:12:00Z", "2026-12-05T00:21:00Z"},
		{"0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"30 2 * * *", "Europe/Berlin", "2027-03-27T12:00:00Z", "2027-03-29T00:30:00Z"}, // 02:30 does not occur on 2027-03-28
		{"30 2 * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"}, // 02:30 CEST, the first pass
		{"30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}, // not again at 02:30 CET
	} {
		t.Run(tc.expr+" "+tc.zone+" after "+tc.after, func(t *testing.T) {
			s, err := ParseSchedule(tc.expr, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(at(t, tc.after)); !got.Equal(at(t, tc.want)) {
				t.Fatalf("Next = %s, want %s", got.UTC().Format(time.RFC3339), tc.want)
			}
		})
	}
}

func TestScheduleNeverMatchingHasNoNext(t *testing.T) {
	s, err := ParseSchedule("0 0 31 2 *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Fatalf("February 31st fires at %s", got)
	}
}

func TestParseScheduleRefusesWhatTheGrammarLacks(t *testing.T) {
	for _, tc := range []struct{ expr, zone, want string }{
		{"* * * *", "UTC", "five fields"},
		{"* * * * * *", "UTC", "five fields"},
		{"60 * * * *", "UTC", "minute"},
		{"* 24 * * *", "UTC", "hour"},
		{"* * 0 * *", "UTC", "day of month"},
		{"* * * 13 *", "UTC", "month"},
		{"* * * * 8", "UTC", "day of week"},
		{"*/0 * * * *", "UTC", "positive integer"},
		{"5/2 * * * *", "UTC", "a step applies"},
		{"@daily", "UTC", "five fields"},
		{"0 0 ? * *", "UTC", "day of month"},
		{"0 0 L * *", "UTC", "day of month"},
		{"10-5 * * * *", "UTC", "backwards"},
		{"* * * * *", "", "timeZone"},
		{"* * * * *", "Mars/Olympus", "time zone"},
	} {
		t.Run(tc.expr+" "+tc.zone, func(t *testing.T) {
			_, err := ParseSchedule(tc.expr, tc.zone)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestDueRunsOnTimeCatchesUpOnceOrSkips(t *testing.T) {
	daily, err := ParseSchedule("0 7 * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	due := at(t, "2026-12-01T07:00:00Z")
	for _, tc := range []struct {
		name, policy, now string
		busy              bool
		want              Fire
	}{
		{"not due yet", "", "2026-12-01T06:59:00Z", false, Fire{}},
		{"due now", "", "2026-12-01T07:00:05Z", false, Fire{Run: true, ScheduledFor: due}},
		{"found a minute late", "skip", "2026-12-01T07:01:00Z", false, Fire{Run: true, ScheduledFor: due}},
		{"a run in flight drops it", "", "2026-12-01T07:00:05Z", true, Fire{}},
		{"down for hours, runOnce", "runOnce", "2026-12-01T11:00:00Z", false, Fire{Run: true, ScheduledFor: due, CatchUp: true}},
		{"down for days, default policy runs once for the latest", "", "2026-12-04T09:00:00Z", false,
			Fire{Run: true, ScheduledFor: at(t, "2026-12-04T07:00:00Z"), CatchUp: true}},
		{"down for days, skip", "skip", "2026-12-04T09:00:00Z", false, Fire{}},
		{"down for days, back just at an occurrence", "skip", "2026-12-04T07:00:30Z", false,
			Fire{Run: true, ScheduledFor: at(t, "2026-12-04T07:00:00Z")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Due(daily, tc.policy, due, at(t, tc.now), tc.busy)
			if got.Run != tc.want.Run || got.CatchUp != tc.want.CatchUp || !got.ScheduledFor.Equal(tc.want.ScheduledFor) {
				t.Fatalf("Due = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestGatesMigrationFirstThenEnablement(t *testing.T) {
	for _, tc := range []struct {
		g              Gates
		access, run    string
		runOperational bool
	}{
		{Gates{}, MigrationRequired, MigrationRequired, false},
		{Gates{Enabled: true}, MigrationRequired, MigrationRequired, false},
		{Gates{Migrated: true}, "", Disabled, false},
		{Gates{Enabled: true, Migrated: true}, "", "", true},
	} {
		if got := tc.g.Access(); got != tc.access {
			t.Errorf("%+v Access = %q, want %q", tc.g, got, tc.access)
		}
		if got := tc.g.Run(); got != tc.run {
			t.Errorf("%+v Run = %q, want %q", tc.g, got, tc.run)
		}
		ops := tc.g.Operations()
		hasRun := len(ops) == 3 && ops[2] == ahp.AutomationOpRun
		if hasRun != tc.runOperational || ops[0] != ahp.AutomationOpUpdate || ops[1] != ahp.AutomationOpRemove {
			t.Errorf("%+v Operations = %v", tc.g, ops)
		}
	}
}

func TestConfigChangeGuardsTheMigrationRecord(t *testing.T) {
	done := map[string]any{"version": float64(1), "status": "complete", "resources": []any{}}
	for _, tc := range []struct {
		name    string
		cur     Gates
		patch   map[string]any
		replace bool
		want    Gates
		refused string
	}{
		{"enable", Gates{}, map[string]any{EnabledKey: true}, false, Gates{Enabled: true}, ""},
		{"other keys pass", Gates{Enabled: true}, map[string]any{"telemetryLevel": "off"}, false, Gates{Enabled: true}, ""},
		{"replace without the key disables", Gates{Enabled: true}, map[string]any{}, true, Gates{}, ""},
		{"replace may not drop the migration record", Gates{Enabled: true, Migrated: true}, map[string]any{EnabledKey: true}, true, Gates{Enabled: true, Migrated: true}, "cannot be undone"},
		{"enabled must be a bool", Gates{}, map[string]any{EnabledKey: "yes"}, false, Gates{}, "true or false"},
		{"migration completes while enabled", Gates{Enabled: true}, map[string]any{MigrationKey: done}, false, Gates{Enabled: true, Migrated: true}, ""},
		{"migration refused while disabled", Gates{}, map[string]any{MigrationKey: done}, false, Gates{}, "disabled"},
		{"migration must be alone", Gates{Enabled: true}, map[string]any{MigrationKey: done, EnabledKey: true}, false, Gates{Enabled: true}, "on its own"},
		{"migration cannot be undone", Gates{Enabled: true, Migrated: true}, map[string]any{MigrationKey: nil}, false, Gates{Enabled: true, Migrated: true}, "cannot be undone"},
		{"duplicate resources refused", Gates{Enabled: true}, map[string]any{MigrationKey: map[string]any{"version": float64(1), "status": "complete", "resources": []any{"a", "a"}}}, false, Gates{Enabled: true}, "cannot be undone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, refused := ConfigChange(tc.cur, tc.patch, tc.replace)
			if got != tc.want || (tc.refused == "") != (refused == "") || !strings.Contains(refused, tc.refused) {
				t.Fatalf("ConfigChange = %+v %q, want %+v %q", got, refused, tc.want, tc.refused)
			}
		})
	}
}

func TestValidateDefinitions(t *testing.T) {
	good := func() ahp.AutomationDefinition {
		return ahp.AutomationDefinition{Title: "Morning", Message: ahp.Message{Text: "hi", Origin: ahp.MessageOrigin{Kind: ahp.MessageFromAutomation}},
			Triggers: []ahp.AutomationTrigger{}}
	}
	sched := func(id, expr string) ahp.AutomationTrigger {
		return ahp.AutomationTrigger{ID: id, Kind: ahp.TriggerSchedule, Schedule: &ahp.AutomationSchedule{Expression: expr, TimeZone: "UTC"}}
	}
	for _, tc := range []struct {
		name string
		edit func(*ahp.AutomationDefinition)
		want string
	}{
		{"manual only", func(*ahp.AutomationDefinition) {}, ""},
		{"a schedule", func(d *ahp.AutomationDefinition) { d.Triggers = append(d.Triggers, sched("a", "0 7 * * *")) }, ""},
		{"no title", func(d *ahp.AutomationDefinition) { d.Title = " " }, "title"},
		{"a user message", func(d *ahp.AutomationDefinition) { d.Message.Origin.Kind = "user" }, "origin.kind"},
		{"bad cron", func(d *ahp.AutomationDefinition) { d.Triggers = append(d.Triggers, sched("a", "0 7 * *")) }, "five fields"},
		{"duplicate trigger ids", func(d *ahp.AutomationDefinition) {
			d.Triggers = append(d.Triggers, sched("a", "0 7 * * *"), sched("a", "0 8 * * *"))
		}, "unique"},
		{"an event trigger", func(d *ahp.AutomationDefinition) {
			d.Triggers = append(d.Triggers, ahp.AutomationTrigger{ID: "e", Kind: ahp.TriggerEvent, Type: "github.push"})
		}, "no event trigger type"},
		{"bad misfire policy", func(d *ahp.AutomationDefinition) {
			tr := sched("a", "0 7 * * *")
			tr.MisfirePolicy = "always"
			d.Triggers = append(d.Triggers, tr)
		}, "misfirePolicy"},
		{"attachments", func(d *ahp.AutomationDefinition) {
			d.Message.Attachments = []ahp.MessageAttachment{{}}
		}, "attachments"},
		{"too large", func(d *ahp.AutomationDefinition) { d.Message.Text = strings.Repeat("x", MaxDefinitionBytes) }, "larger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good()
			tc.edit(&d)
			err := Validate(d)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNextRunOnlyForEnabledSchedules(t *testing.T) {
	now := at(t, "2026-12-05T06:00:00Z")
	d := ahp.AutomationDefinition{Enabled: true, Triggers: []ahp.AutomationTrigger{
		{ID: "late", Kind: ahp.TriggerSchedule, Schedule: &ahp.AutomationSchedule{Expression: "0 9 * * *", TimeZone: "UTC"}},
		{ID: "early", Kind: ahp.TriggerSchedule, Schedule: &ahp.AutomationSchedule{Expression: "0 7 * * *", TimeZone: "UTC"}},
	}}
	if got := NextRun(d, now); !got.Equal(at(t, "2026-12-05T07:00:00Z")) {
		t.Fatalf("NextRun = %s, want the earliest trigger's 07:00", got)
	}
	d.Enabled = false
	if got := NextRun(d, now); !got.IsZero() {
		t.Fatalf("a disabled automation runs on its own at %s", got)
	}
	d.Enabled, d.Triggers = true, nil
	if got := NextRun(d, now); !got.IsZero() {
		t.Fatalf("a manual-only automation runs on its own at %s", got)
	}
}

func TestApplyReplacesOnlyNamedFields(t *testing.T) {
	d := ahp.AutomationDefinition{Title: "a", Enabled: true, Triggers: []ahp.AutomationTrigger{{ID: "x"}}}
	title := "b"
	got := Apply(d, ahp.AutomationDefinitionPatch{Title: &title})
	if got.Title != "b" || !got.Enabled || len(got.Triggers) != 1 {
		t.Fatalf("Apply = %+v", got)
	}
	got = Apply(d, ahp.AutomationDefinitionPatch{Triggers: []ahp.AutomationTrigger{}})
	if len(got.Triggers) != 0 || got.Title != "a" {
		t.Fatalf("Apply with empty triggers = %+v", got)
	}
	if !Same(d, d) || Same(d, got) {
		t.Fatal("Same does not compare definitions")
	}
}
