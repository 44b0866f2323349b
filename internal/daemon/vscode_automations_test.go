package daemon_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
)

// The ports of VS Code's automationsSuite (microsoft/vscode
// src/vs/platform/agentHost/test/node/e2e/suites/automationsSuite.ts at
// 0d28ff31ff195e22bb97f2ed275cc123d01430e2): the host-owned automation
// catalogue on ahp-automations://, its two root config gates, and a
// definition surviving a real restart of the daemon on the same SQLite
// file. Beside them, what the suite leaves out: runs that start a session
// turn, cancel, the scheduler on an injected clock, the grants and bounds.

const (
	automationsEnabledKey  = "automationsEnabled"
	automationMigrationKey = "vscode.automationMigration"
	migrationRequired      = "Automation migration must complete before automations can be accessed or run."
	automationsDisabled    = "Automations are disabled."
)

var (
	ungatedOperations = []string{"update", "remove"}
	gatedOperations   = []string{"update", "remove", "run"}
)

// autoClient is one connection driving the catalogue.
type autoClient struct {
	t *testing.T
	c *ahptest.Client
}

func newAutoClient(t *testing.T, e *testEnv, clientID string) *autoClient {
	t.Helper()
	c := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	c.Initialize(clientID)
	return &autoClient{t: t, c: c}
}

func (a *autoClient) rootConfigValues() map[string]any {
	a.t.Helper()
	raw, _ := a.c.Subscribe(ahp.RootURI)
	var st struct {
		Config *struct {
			Values map[string]any `json:"values"`
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		a.t.Fatal(err)
	}
	if st.Config == nil {
		return map[string]any{}
	}
	return st.Config.Values
}

// setRootConfigValue skips the dispatch when the host holds the value
// already, as the suite's does.
func (a *autoClient) setRootConfigValue(key string, value any) {
	a.t.Helper()
	if reflect.DeepEqual(a.rootConfigValues()[key], value) {
		return
	}
	env := a.c.AwaitEcho(a.c.Dispatch(ahp.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{key: value}}))
	if env.RejectionReason != "" {
		a.t.Fatalf("root/configChanged %s refused: %s", key, env.RejectionReason)
	}
}

func (a *autoClient) setAutomationsEnabled(on bool) { a.setRootConfigValue(automationsEnabledKey, on) }

func (a *autoClient) completeMigration() {
	a.setRootConfigValue(automationMigrationKey, map[string]any{"version": float64(1), "status": "complete", "resources": []any{}})
}

func (a *autoClient) openGates() {
	a.setAutomationsEnabled(true)
	a.completeMigration()
}

func (a *autoClient) subscribeCatalog() ahp.AutomationState {
	a.t.Helper()
	raw, _ := a.c.Subscribe(ahp.AutomationsURI)
	var st ahp.AutomationState
	if err := json.Unmarshal(raw, &st); err != nil {
		a.t.Fatal(err)
	}
	return st
}

func automationResource(prefix string) string {
	return "ahp-automation:/" + prefix + "-" + uuid.NewString()
}

func buildDefinition(title string) map[string]any {
	return map[string]any{
		"title":    title,
		"message":  map[string]any{"text": `Reply exactly "ran".`, "origin": map[string]any{"kind": "automation"}},
		"session":  map[string]any{},
		"enabled":  false,
		"triggers": []any{},
	}
}

// mark is the newest serverSeq received so far (the suite's
// clearReceived: a wait after it looks only at what came later).
func (a *autoClient) mark() int64 {
	var seq int64
	for _, e := range a.c.Envelopes() {
		seq = max(seq, e.ServerSeq)
	}
	return seq
}

// awaitAfter waits for an envelope after serverSeq n that match takes.
func (a *autoClient) awaitAfter(n int64, what string, match func(ahptest.Envelope) bool) ahptest.Envelope {
	a.t.Helper()
	return a.c.AwaitEnvelope(what, func(e ahptest.Envelope) bool { return e.ServerSeq > n && match(e) })
}

// awaitEntry is the catalogue's entry of resource once accept takes it:
// in the snapshot, or in an automation/set after it.
func (a *autoClient) awaitEntry(resource string, accept func(ahp.AutomationEntry) bool) ahp.AutomationEntry {
	a.t.Helper()
	if en := entryFor(a.subscribeCatalog(), resource); en != nil && accept(*en) {
		return *en
	}
	return a.awaitSet(0, resource, accept)
}

// awaitSet waits, after mark n, for the automation/set of resource that
// accept takes.
func (a *autoClient) awaitSet(n int64, resource string, accept func(ahp.AutomationEntry) bool) ahp.AutomationEntry {
	a.t.Helper()
	var entry ahp.AutomationEntry
	a.awaitAfter(n, "automation/set of "+resource, func(e ahptest.Envelope) bool {
		if e.Channel != ahp.AutomationsURI || e.Type() != "automation/set" {
			return false
		}
		var got ahp.AutomationEntry
		if e.Field("automation", &got) != nil || got.Resource != resource || accept != nil && !accept(got) {
			return false
		}
		entry = got
		return true
	})
	return entry
}

func (a *autoClient) create(resource string, def map[string]any) ahp.AutomationEntry {
	a.t.Helper()
	n := a.mark()
	a.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/createRequested", "resource": resource, "definition": def})
	return a.awaitSet(n, resource, nil)
}

// rejectionMessage is what a failed request said, or a marker when it
// unexpectedly succeeded.
func rejectionMessage(_ json.RawMessage, err *ahptest.RPCError) string {
	if err == nil {
		return "<request unexpectedly succeeded>"
	}
	return err.Message
}

func (a *autoClient) listTriggerDefinitions() (json.RawMessage, *ahptest.RPCError) {
	return a.c.Call("listAutomationTriggerDefinitions", map[string]any{"channel": ahp.RootURI})
}

func entryFor(st ahp.AutomationState, resource string) *ahp.AutomationEntry {
	for i := range st.Entries {
		if st.Entries[i].Resource == resource {
			return &st.Entries[i]
		}
	}
	return nil
}

// TestVSCodeAutomations runs automationsSuite's seven conformance cases in
// its order on one daemon: the first two describe a host that has never
// opened a gate, and migration, once complete, stays complete.
func TestVSCodeAutomations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := 0
	client := func(t *testing.T, prefix string) *autoClient {
		n++
		return newAutoClient(t, e, fmt.Sprintf("%s-script-%d", prefix, n))
	}

	conformanceCase(t, "a fresh agent host advertises the automation catalogue and its capabilities", func(t *testing.T) {
		c := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
		init := c.Initialize("automations-capabilities")
		var res struct {
			Automations json.RawMessage `json:"automations"`
		}
		if err := json.Unmarshal(init, &res); err != nil {
			t.Fatal(err)
		}
		a := &autoClient{t: t, c: c}
		catalog := a.subscribeCatalog()
		sameWire(t, "initialize's automations", res.Automations, map[string]any{"create": map[string]any{}, "schedules": map[string]any{}, "runCancellation": map[string]any{}, "runHistoryLimit": 50})
		if catalog.Entries == nil || len(catalog.Entries) != 0 {
			t.Fatalf("a fresh catalogue has entries %+v, want []", catalog.Entries)
		}
	})

	conformanceCase(t, "automation commands are rejected until automations are enabled and migration completes", func(t *testing.T) {
		a := client(t, "automations-gates")
		beforeAnyGate := rejectionMessage(a.listTriggerDefinitions())
		a.setAutomationsEnabled(true)
		afterEnabling := rejectionMessage(a.listTriggerDefinitions())
		a.completeMigration()
		afterMigration, err := a.listTriggerDefinitions()
		if err != nil {
			t.Fatalf("listAutomationTriggerDefinitions with both gates open: %v", err)
		}
		a.setAutomationsEnabled(false)
		afterDisabling := rejectionMessage(a.listTriggerDefinitions())
		a.setAutomationsEnabled(true)
		if !strings.Contains(beforeAnyGate, migrationRequired) || !strings.Contains(afterEnabling, migrationRequired) ||
			!strings.Contains(afterDisabling, automationsDisabled) {
			t.Fatalf("gates: before any %q, after enabling %q, after disabling %q", beforeAnyGate, afterEnabling, afterDisabling)
		}
		sameWire(t, "trigger definitions", afterMigration, map[string]any{"items": []any{}})
	})

	conformanceCase(t, "an automation created while automations are disabled gains its run operation when they are enabled", func(t *testing.T) {
		a := client(t, "automations-run-grant")
		a.openGates()
		a.subscribeCatalog()
		a.setAutomationsEnabled(false)
		resource := automationResource("run-grant")
		whileDisabled := a.create(resource, buildDefinition("Run grant"))
		n := a.mark()
		a.setAutomationsEnabled(true)
		afterEnabling := a.awaitSet(n, resource, func(e ahp.AutomationEntry) bool { return len(e.Operations) == 3 })
		if !reflect.DeepEqual(whileDisabled.Operations, ungatedOperations) || !reflect.DeepEqual(afterEnabling.Operations, gatedOperations) ||
			afterEnabling.Definition.Title != "Run grant" {
			t.Fatalf("operations while disabled %v, after enabling %v (title %q)", whileDisabled.Operations, afterEnabling.Operations, afterEnabling.Definition.Title)
		}
	})

	conformanceCase(t, "creating an automation is idempotent only for an identical definition", func(t *testing.T) {
		a := client(t, "automations-idempotent-create")
		a.openGates()
		a.subscribeCatalog()
		resource := automationResource("idempotent-create")
		def := buildDefinition("Stable definition")
		created := a.create(resource, def)
		repeated := a.create(resource, def)
		n := a.mark()
		a.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/createRequested", "resource": resource, "definition": buildDefinition("Conflicting definition")})
		rejected := a.awaitAfter(n, "the conflicting create's rejection", func(e ahptest.Envelope) bool {
			return e.Channel == ahp.AutomationsURI && e.Type() == "automation/createRequested" && e.RejectionReason != ""
		})
		if repeated.CreatedAt != created.CreatedAt || repeated.ModifiedAt != created.ModifiedAt || repeated.Definition.Title != "Stable definition" {
			t.Fatalf("the repeated create changed the entry: %+v, then %+v", created, repeated)
		}
		if want := "Automation already exists: " + resource; rejected.RejectionReason != want {
			t.Fatalf("rejection %q, want %q", rejected.RejectionReason, want)
		}
	})

	conformanceCase(t, "updating and removing an automation keeps the catalogue authoritative", func(t *testing.T) {
		a := client(t, "automations-update-remove")
		a.openGates()
		a.subscribeCatalog()
		resource := automationResource("update-remove")
		a.create(resource, buildDefinition("Original title"))
		n := a.mark()
		a.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/updateRequested", "resource": resource, "changes": map[string]any{"title": "Renamed title"}})
		updated := a.awaitSet(n, resource, nil)
		n = a.mark()
		a.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/removed", "resource": resource})
		a.awaitAfter(n, "automation/removed of "+resource, func(e ahptest.Envelope) bool {
			var r string
			return e.Channel == ahp.AutomationsURI && e.Type() == "automation/removed" && e.Field("resource", &r) == nil && r == resource && e.RejectionReason == ""
		})
		catalog := a.subscribeCatalog()
		if updated.Definition.Title != "Renamed title" || !reflect.DeepEqual(updated.Operations, gatedOperations) || updated.Runs == nil || len(updated.Runs) != 0 {
			t.Fatalf("updated entry %+v", updated)
		}
		if updated.Definition.Message.Text != `Reply exactly "ran".` {
			t.Fatalf("the patch replaced fields it did not name: %+v", updated.Definition)
		}
		if entryFor(catalog, resource) != nil {
			t.Fatalf("%s survives its removal", resource)
		}
	})

	conformanceCase(t, "fetchAutomationRuns acknowledges an automation that has never run and rejects an unknown one", func(t *testing.T) {
		a := client(t, "automations-fetch-runs")
		a.openGates()
		a.subscribeCatalog()
		resource := automationResource("fetch-runs")
		a.create(resource, buildDefinition("Fetch runs"))
		unknown := automationResource("fetch-runs-unknown")
		acknowledged := a.c.MustCall("fetchAutomationRuns", map[string]any{"channel": ahp.AutomationsURI, "automation": resource})
		rejected := rejectionMessage(a.c.Call("fetchAutomationRuns", map[string]any{"channel": ahp.AutomationsURI, "automation": unknown}))
		entry := entryFor(a.subscribeCatalog(), resource)
		sameWire(t, "fetchAutomationRuns", acknowledged, map[string]any{})
		if entry == nil || entry.Runs == nil || len(entry.Runs) != 0 || entry.RunsNextCursor != "" {
			t.Fatalf("entry of a never-run automation: %+v", entry)
		}
		if !strings.Contains(rejected, "Automation not found: "+unknown) {
			t.Fatalf("unknown automation answered %q", rejected)
		}
	})

	conformanceCase(t, "a created automation survives an agent host restart", func(t *testing.T) {
		a := client(t, "automations-restart")
		a.openGates()
		a.subscribeCatalog()
		resource := automationResource("restart")
		created := a.create(resource, buildDefinition("Survives restart"))
		e.restart() // a real daemon restart on the same SQLite file
		b := client(t, "automations-restart-verify")
		restored := entryFor(b.subscribeCatalog(), resource)
		if created.Definition.Title != "Survives restart" || !reflect.DeepEqual(created.Operations, gatedOperations) {
			t.Fatalf("created %+v", created)
		}
		if restored == nil || restored.Definition.Title != "Survives restart" || !reflect.DeepEqual(restored.Operations, gatedOperations) {
			t.Fatalf("restored %+v", restored)
		}
	})
}

// openedAutomations is a daemon with both automation gates open and a
// client on its catalogue.
func openedAutomations(t *testing.T, e *testEnv) *autoClient {
	t.Helper()
	a := newAutoClient(t, e, "automations-"+uuid.NewString())
	a.openGates()
	a.subscribeCatalog()
	return a
}

// awaitRun waits for the run's lifecycle to reach status and returns the
// run's state.
func (a *autoClient) awaitRun(run, status string) ahp.AutomationRunState {
	a.t.Helper()
	raw, _ := a.c.Subscribe(run)
	var st ahp.AutomationRunState
	if err := json.Unmarshal(raw, &st); err != nil {
		a.t.Fatal(err)
	}
	if st.Lifecycle.Status != status {
		a.awaitAfter(0, run+" "+status, func(e ahptest.Envelope) bool {
			var l ahp.AutomationRunLifecycle
			return e.Channel == run && e.Type() == "automationRun/lifecycleChanged" && e.Field("lifecycle", &l) == nil && l.Status == status
		})
		raw, _ = a.c.Subscribe(run)
		if err := json.Unmarshal(raw, &st); err != nil {
			a.t.Fatal(err)
		}
	}
	return st
}

func runAutomation(t *testing.T, c *ahptest.Client, automation, requestID string) string {
	t.Helper()
	var res ahp.RunAutomationResult
	if err := json.Unmarshal(c.MustCall("runAutomation", map[string]any{"channel": ahp.AutomationsURI, "automation": automation, "requestId": requestID}), &res); err != nil {
		t.Fatal(err)
	}
	if !ahp.IsAutomationRunURI(res.Resource) {
		t.Fatalf("runAutomation answered %q, not a run URI", res.Resource)
	}
	return res.Resource
}

// TestAutomationRunStartsASessionTurn: a manual run makes a session whose
// first turn is the automation's message, sent as an automation; the run
// completes with its turn, is listed in the entry's history, and a
// retried requestId answers the same run.
func TestAutomationRunStartsASessionTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := openedAutomations(t, e)
	resource := automationResource("run")
	def := buildDefinition("Morning report")
	def["message"] = map[string]any{"text": "summarise the repository", "origin": map[string]any{"kind": "automation"}}
	def["session"] = map[string]any{"provider": "script", "workingDirectories": []any{ahp.FileURI(e.workDir)}}
	a.create(resource, def)
	run := runAutomation(t, a.c, resource, "req-1")
	if again := runAutomation(t, a.c, resource, "req-1"); again != run {
		t.Fatalf("the same requestId started another run: %s, then %s", run, again)
	}
	st := a.awaitRun(run, ahp.RunCompleted)
	if st.PrimarySession == "" || len(st.Sessions) != 1 || st.Sessions[0] != st.PrimarySession || st.Origin.Kind != "manual" || len(st.Operations) != 0 {
		t.Fatalf("completed run %+v", st)
	}
	if st.Lifecycle.StartedAt == "" || st.Lifecycle.CompletedAt == "" {
		t.Fatalf("completed run's times %+v", st.Lifecycle)
	}
	ss, _ := a.c.Subscribe(st.PrimarySession)
	var sess ahp.SessionState
	if err := json.Unmarshal(ss, &sess); err != nil {
		t.Fatal(err)
	}
	cst, _ := a.c.Subscribe(sess.DefaultChat)
	cs := chatState(t, cst)
	if len(cs.Turns) != 1 || cs.Turns[0].Message.Text != "summarise the repository" || cs.Turns[0].Message.Origin.Kind != "automation" ||
		cs.Turns[0].State != ahp.TurnComplete {
		t.Fatalf("the run's session chat: %s", cst)
	}
	entry := entryFor(a.subscribeCatalog(), resource)
	if entry == nil || len(entry.Runs) != 1 || entry.Runs[0].Resource != run || entry.Runs[0].Lifecycle.Status != ahp.RunCompleted || entry.Runs[0].SessionCount != 1 {
		t.Fatalf("entry after the run: %+v", entry)
	}
}

// TestAutomationRunCancelled: cancelling a running run stops its turn and
// ends the run cancelled; a second run waits for none (one in flight at a
// time: a run while one is in flight is refused).
func TestAutomationRunCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := openedAutomations(t, e)
	resource := automationResource("cancel")
	def := buildDefinition("Held")
	def["message"] = map[string]any{"text": "[hold] keep going", "origin": map[string]any{"kind": "automation"}}
	a.create(resource, def)
	run := runAutomation(t, a.c, resource, "req-1")
	a.awaitRun(run, ahp.RunRunning)
	_, err := a.c.Call("runAutomation", map[string]any{"channel": ahp.AutomationsURI, "automation": resource, "requestId": "req-2"})
	wantCode(t, err, ahp.CodeConflict, "in flight")
	n := a.mark()
	a.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/removed", "resource": resource})
	a.awaitAfter(n, "refusal of removing a running automation", func(e ahptest.Envelope) bool {
		return e.Type() == "automation/removed" && strings.Contains(e.RejectionReason, "in flight")
	})
	a.c.Dispatch(run, map[string]any{"type": "automationRun/cancelRequested"})
	st := a.awaitRun(run, ahp.RunCancelled)
	if len(st.Operations) != 0 || st.Lifecycle.CompletedAt == "" {
		t.Fatalf("cancelled run %+v", st)
	}
	n = a.mark()
	a.c.Dispatch(run, map[string]any{"type": "automationRun/cancelRequested"})
	a.awaitAfter(n, "refusal of cancelling an ended run", func(e ahptest.Envelope) bool {
		return e.Channel == run && e.RejectionReason != ""
	})
	a.awaitRun(runAutomation(t, a.c, resource, "req-3"), ahp.RunRunning)
}

// TestAutomationRunConfinedToServedPaths: a template naming a directory
// outside the served paths (absolute, through .., or a symlink) makes a
// failed run saying so, and no session.
func TestAutomationRunConfinedToServedPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := openedAutomations(t, e)
	outside := t.TempDir()
	for name, dir := range map[string]string{
		"absolute": outside,
		"dotdot":   e.workDir + "/../" + lastElem(outside),
	} {
		resource := automationResource("confine-" + name)
		def := buildDefinition("Confined " + name)
		def["session"] = map[string]any{"workingDirectories": []any{ahp.FileURI(dir)}}
		a.create(resource, def)
		st := a.awaitRun(runAutomation(t, a.c, resource, "r"), ahp.RunFailed)
		if st.Lifecycle.Error == nil || !strings.Contains(st.Lifecycle.Error.Message, "outside the daemon's served paths") || len(st.Sessions) != 0 {
			t.Fatalf("%s: run %+v", name, st)
		}
	}
}

func lastElem(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// fakeClock is a daemon clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// TestAutomationScheduleFiresAndCatchesUpAfterARestart: an enabled
// automation with a daily schedule runs when the injected clock reaches
// its occurrence; the daemon then stays down past three occurrences and,
// restarted on the same SQLite file, makes one catch-up run for the
// latest of them (the default runOnce policy), not three.
func TestAutomationScheduleFiresAndCatchesUpAfterARestart(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 12, 1, 6, 59, 30, 0, time.UTC)}
	sc := script.New(script.Options{})
	reg, err := agent.NewRegistry(sc)
	if err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, &testEnv{t: t, agents: reg, workDir: t.TempDir(), script: sc,
		options: daemon.Options{Now: clock.Now, AutomationTick: 10 * time.Millisecond}})
	a := openedAutomations(t, e)
	resource := automationResource("daily")
	def := buildDefinition("Every morning")
	def["enabled"] = true
	def["triggers"] = []any{map[string]any{"id": "morning", "kind": "schedule", "schedule": map[string]any{"expression": "0 7 * * *", "timeZone": "UTC"}}}
	created := a.create(resource, def)
	if created.NextRunAt != "2026-12-01T07:00:00.000Z" {
		t.Fatalf("nextRunAt %q, want 07:00 that day", created.NextRunAt)
	}
	n := a.mark()
	clock.set(time.Date(2026, 12, 1, 7, 0, 10, 0, time.UTC))
	fired := a.awaitSet(n, resource, func(e ahp.AutomationEntry) bool {
		return len(e.Runs) == 1 && e.Runs[0].Lifecycle.Status == ahp.RunCompleted
	})
	origin := fired.Runs[0].Origin
	if origin.Kind != "trigger" || origin.TriggerID != "morning" || origin.ScheduledFor != "2026-12-01T07:00:00.000Z" || origin.CatchUp {
		t.Fatalf("scheduled run's origin %+v", origin)
	}
	if fired.NextRunAt != "2026-12-02T07:00:00.000Z" {
		t.Fatalf("nextRunAt after the run %q, want the next morning", fired.NextRunAt)
	}

	e.stop()
	clock.set(time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC)) // down for three mornings
	e.start()
	b := newAutoClient(t, e, "automations-after-restart")
	caughtUp := b.awaitEntry(resource, func(en ahp.AutomationEntry) bool {
		return len(en.Runs) == 2 && en.Runs[0].Lifecycle.Terminal()
	})
	o := caughtUp.Runs[0].Origin
	if o.Kind != "trigger" || !o.CatchUp || o.ScheduledFor != "2026-12-04T07:00:00.000Z" {
		t.Fatalf("catch-up run's origin %+v (runs %+v)", o, caughtUp.Runs)
	}
	if caughtUp.NextRunAt != "2026-12-05T07:00:00.000Z" {
		t.Fatalf("nextRunAt after catching up %q", caughtUp.NextRunAt)
	}
}

// TestAutomationsNeedTheirGrants: reading the catalogue needs
// automation:read, authoring automation:write, running and cancelling
// automation:run; another principal's automation is not found; the gates
// are root config (root:configure). Each refusal keeps the connection.
func TestAutomationsNeedTheirGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(cfg *daemon.Config) {
		cfg.Tokens = []daemon.TokenConfig{
			{Token: "nobody", Principal: "user:nobody", Grants: []string{"session:read"}},
			{Token: "reader", Principal: "user:reader", Grants: []string{"automation:read"}},
			{Token: "author", Principal: "user:author", Grants: []string{"automation:read", "automation:write", "session:write"}},
			{Token: "other", Principal: "user:other", Grants: []string{"automation:*", "session:write"}},
		}
	})
	root := openedAutomations(t, e)
	dial := func(token string) *autoClient {
		c := ahptest.Dial(t, e.d.URL(), token)
		c.Initialize(token)
		return &autoClient{t: t, c: c}
	}
	nobody, reader, author, other := dial("nobody"), dial("reader"), dial("author"), dial("other")

	_, err := nobody.c.Call("subscribe", map[string]any{"channel": ahp.AutomationsURI})
	wantCode(t, err, ahp.CodePermissionDenied, "automation:read")
	_, err = nobody.c.Call("listAutomationTriggerDefinitions", map[string]any{"channel": ahp.RootURI})
	wantCode(t, err, ahp.CodePermissionDenied, "automation:read")
	rejected := nobody.c.AwaitEcho(nobody.c.Dispatch(ahp.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{automationsEnabledKey: false}}))
	if !strings.Contains(rejected.RejectionReason, "root:configure") {
		t.Fatalf("a gate changed without root:configure: %q", rejected.RejectionReason)
	}
	nobody.c.MustCall("ping", map[string]any{"channel": ahp.RootURI})
	// A reconnect restores neither the catalogue nor a run without the
	// grant: they come back missing, never replayed.
	back := ahptest.Dial(t, e.d.URL(), "nobody")
	got := decodeReconnect(t, mustReconnect(t, back, "nobody", 0, ahp.AutomationsURI))
	if len(got.Missing) != 1 || got.Missing[0] != ahp.AutomationsURI {
		t.Fatalf("reconnect without automation:read: missing %v", got.Missing)
	}

	reader.subscribeCatalog()
	readerBack := ahptest.Dial(t, e.d.URL(), "reader")
	if got := decodeReconnect(t, mustReconnect(t, readerBack, "reader", 0, ahp.AutomationsURI)); len(got.Missing) != 0 {
		t.Fatalf("reconnect with automation:read: missing %v", got.Missing)
	}
	res := automationResource("grants")
	rejected = reader.c.AwaitEcho(reader.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/createRequested", "resource": res, "definition": buildDefinition("x")}))
	if !strings.Contains(rejected.RejectionReason, "automation:write") {
		t.Fatalf("a create without automation:write: %q", rejected.RejectionReason)
	}

	author.subscribeCatalog()
	author.create(res, buildDefinition("Author's"))
	_, err = author.c.Call("runAutomation", map[string]any{"channel": ahp.AutomationsURI, "automation": res, "requestId": "r"})
	wantCode(t, err, ahp.CodePermissionDenied, "automation:run")

	// Another principal sees the entry but may not change or run it.
	other.subscribeCatalog()
	rejected = other.c.AwaitEcho(other.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/updateRequested", "resource": res, "changes": map[string]any{"title": "mine"}}))
	if !strings.Contains(rejected.RejectionReason, "Automation not found") {
		t.Fatalf("another principal updated the automation: %q", rejected.RejectionReason)
	}
	_, err = other.c.Call("runAutomation", map[string]any{"channel": ahp.AutomationsURI, "automation": res, "requestId": "r"})
	wantCode(t, err, ahp.CodeSessionNotFound, "Automation not found")

	// The deployment runs it; its session is the author's; the reader
	// may not cancel.
	def := buildDefinition("Held")
	def["message"] = map[string]any{"text": "[hold] wait", "origin": map[string]any{"kind": "automation"}}
	held := automationResource("held")
	root.create(held, def)
	run := runAutomation(t, root.c, held, "r")
	root.awaitRun(run, ahp.RunRunning)
	rejected = reader.c.AwaitEcho(reader.c.Dispatch(run, map[string]any{"type": "automationRun/cancelRequested"}))
	if !strings.Contains(rejected.RejectionReason, "automation:run") {
		t.Fatalf("a cancel without automation:run: %q", rejected.RejectionReason)
	}
	_, err = nobody.c.Call("subscribe", map[string]any{"channel": run})
	wantCode(t, err, ahp.CodePermissionDenied, "automation:read")
	root.c.Dispatch(run, map[string]any{"type": "automationRun/cancelRequested"})
	root.awaitRun(run, ahp.RunCancelled)
}

// TestAutomationsBounded: the catalogue keeps at most 100 automations; a
// definition without the automation origin, with a bad schedule or an
// event trigger is refused whole; none of them is stored.
func TestAutomationsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := openedAutomations(t, e)
	refused := func(res string, def map[string]any, want string) {
		t.Helper()
		env := a.c.AwaitEcho(a.c.Dispatch(ahp.AutomationsURI, map[string]any{"type": "automation/createRequested", "resource": res, "definition": def}))
		if !strings.Contains(env.RejectionReason, want) {
			t.Fatalf("create of %s: rejection %q, want one naming %q", res, env.RejectionReason, want)
		}
	}
	user := buildDefinition("user")
	user["message"] = map[string]any{"text": "x", "origin": map[string]any{"kind": "user"}}
	refused(automationResource("user"), user, "origin.kind")
	badCron := buildDefinition("cron")
	badCron["triggers"] = []any{map[string]any{"id": "t", "kind": "schedule", "schedule": map[string]any{"expression": "@daily", "timeZone": "UTC"}}}
	refused(automationResource("cron"), badCron, "five fields")
	event := buildDefinition("event")
	event["triggers"] = []any{map[string]any{"id": "t", "kind": "event", "type": "github.push", "title": "Push", "events": []any{}}}
	refused(automationResource("event"), event, "no event trigger type")
	refused("ahp-session:/x", buildDefinition("scheme"), "ahp-automation")
	for i := 0; i < 100; i++ {
		a.create(automationResource(fmt.Sprint(i)), buildDefinition(fmt.Sprint(i)))
	}
	refused(automationResource("101st"), buildDefinition("101st"), "at most 100")
	if got := len(a.subscribeCatalog().Entries); got != 100 {
		t.Fatalf("catalogue holds %d automations, want 100", got)
	}
}
