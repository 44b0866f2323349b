package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/automation"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/env"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/store"
)

// Stored settings holding the automation gates (automation.Gates).
const (
	settingAutomationsEnabled  = "automations.enabled"
	settingAutomationMigration = "automations.migration"
)

// automationDesk owns the automation catalogue (ahp-automations://) and
// the run channels (ahp-automation-run:/<id>): the definitions clients
// author, the gates root config holds, the runs a client or a schedule
// starts, each a fresh session whose first turn is the automation's
// message, and the scheduler that fires schedule triggers.
//
// Every change runs on the catalogue channel's lane (its actions, its
// requests, the scheduler's ticks, a run's end), so changes are made one
// at a time; each is stored before it is published (store first, then the
// bus, under mu).
type automationDesk struct {
	env             *env.Env
	log             *slog.Logger
	bus             *bus.Bus
	lanes           *lanes
	root            *rootDesk
	sessions        *sessionDesk
	config          *configDesk
	agents          *agent.Registry
	principals      map[string]auth.Principal
	defaultProvider string
	paths           servedPaths
	closing         chan struct{}
	// tick is how often the scheduler looks for due schedule triggers.
	tick time.Duration
	// scheduled ends when the scheduler's goroutine has; started says
	// whether it was started.
	scheduled chan struct{}
	started   atomic.Bool
	// watching counts the goroutines waiting for runs to end.
	watching sync.WaitGroup

	// mu (rank lockorder.HostAutomations) guards gates, entries and runs:
	// a change is stored and published under it, and a snapshot taken as
	// the bus subscribes, so the bus's lock is taken inside.
	mu      lockorder.Mutex
	gates   automation.Gates
	entries []*automationItem
	// runOf maps each run listed in an entry to its automation.
	runOf map[string]string
}

// automationItem is one automation as the desk holds it.
type automationItem struct {
	rec store.AutomationRecord
	def ahp.AutomationDefinition
	// runs are its retained runs, newest first: at most one in flight
	// and automation.RunHistoryLimit terminal ones.
	runs []runItem
}

type runItem struct {
	state     ahp.AutomationRunState
	seq       int64
	requestID string
	// chat and turn are where the run's turn runs, once it started.
	chat, turn string
	owner      string
}

// newAutomationDesk loads the gates and the catalogue. A run a stopped
// daemon left in flight is ended as failed: its turn was ended when the
// host restored the chats.
func newAutomationDesk(ctx context.Context, d *automationDesk) (*automationDesk, error) {
	d.mu = lockorder.Mutex{Rank: lockorder.HostAutomations}
	d.runOf = map[string]string{}
	d.scheduled = make(chan struct{})
	st := d.env.Store
	if v, ok, err := st.GetSetting(ctx, settingAutomationsEnabled); err != nil {
		return nil, err
	} else if ok {
		d.gates.Enabled = v == "true"
	}
	var migration any
	if v, ok, err := st.GetSetting(ctx, settingAutomationMigration); err != nil {
		return nil, err
	} else if ok && json.Unmarshal([]byte(v), &migration) == nil && automation.ValidMigration(migration) {
		d.gates.Migrated = true
	}
	d.root.setAutomationGates(d.gates.Enabled, migration)
	recs, err := st.Automations().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("load automations: %w", err)
	}
	now := d.env.Now()
	for _, rec := range recs {
		it := &automationItem{rec: rec}
		if err := json.Unmarshal(rec.Definition, &it.def); err != nil {
			d.log.Error("stored automation does not decode; skipped", "automation", rec.Resource, "err", err)
			continue
		}
		runs, err := st.Automations().Runs(ctx, rec.Resource)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			ri := runItem{seq: r.Seq, requestID: r.RequestID}
			if err := json.Unmarshal(r.State, &ri.state); err != nil {
				d.log.Error("stored automation run does not decode; skipped", "run", r.Resource, "err", err)
				continue
			}
			if !ri.state.Lifecycle.Terminal() {
				ri.state.Lifecycle = ended(ri.state.Lifecycle, ahp.RunFailed, now, "the host restarted while the run was in flight")
				ri.state.Operations = []string{}
				if err := d.storeRun(ctx, rec.Resource, ri); err != nil {
					return nil, err
				}
			}
			it.runs = append(it.runs, ri)
			d.runOf[ri.state.Resource] = rec.Resource
		}
		d.entries = append(d.entries, it)
	}
	return d, nil
}

// start starts the scheduler; the host calls it once everything it needs
// is restored.
func (d *automationDesk) start() {
	d.started.Store(true)
	go d.schedule()
}

// capabilities is initialize's automations: the catalogue, authoring,
// schedules, cancellation and the run history kept.
func (d *automationDesk) capabilities() *ahp.AutomationCapabilities {
	return &ahp.AutomationCapabilities{Create: &struct{}{}, Schedules: &ahp.AutomationScheduleCapabilities{},
		RunCancellation: &struct{}{}, RunHistoryLimit: automation.RunHistoryLimit}
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func ended(l ahp.AutomationRunLifecycle, status string, now time.Time, reason string) ahp.AutomationRunLifecycle {
	l.Status, l.CompletedAt = status, isoTime(now)
	if status == ahp.RunFailed {
		l.Error = &ahp.ErrorInfo{ErrorType: "automationRunFailed", Message: reason}
	}
	return l
}

// ---------------------------------------------------------------------------
// Reading

func (d *automationDesk) item(resource string) *automationItem {
	for _, it := range d.entries {
		if it.rec.Resource == resource {
			return it
		}
	}
	return nil
}

// entry is it as the catalogue shows it. d.mu must be held.
func (d *automationDesk) entry(it *automationItem) ahp.AutomationEntry {
	e := ahp.AutomationEntry{Resource: it.rec.Resource, Definition: it.def, Runs: []ahp.AutomationRunSummary{},
		Operations: d.operations(it), CreatedAt: isoTime(it.rec.CreatedAt), ModifiedAt: isoTime(it.rec.ModifiedAt)}
	if !it.rec.NextRunAt.IsZero() {
		e.NextRunAt = isoTime(it.rec.NextRunAt)
	}
	if e.Definition.Triggers == nil {
		e.Definition.Triggers = []ahp.AutomationTrigger{}
	}
	for _, r := range it.runs {
		e.Runs = append(e.Runs, r.state.Summary())
	}
	return e
}

// operations: the gates', less remove while a run is in flight (it is
// cancelled first).
func (d *automationDesk) operations(it *automationItem) []string {
	ops := d.gates.Operations()
	if inFlight(it) != nil {
		ops = slices.DeleteFunc(ops, func(op string) bool { return op == ahp.AutomationOpRemove })
	}
	return ops
}

func inFlight(it *automationItem) *runItem {
	for i := range it.runs {
		if !it.runs[i].state.Lifecycle.Terminal() {
			return &it.runs[i]
		}
	}
	return nil
}

// mayRead refuses a connection without automation:read.
func mayDo(cl *client, grant, what string) error {
	if cl.principal.Can(grant) {
		return nil
	}
	return ahp.WithData(ahp.Errorf(ahp.ErrPermissionDenied, "%s needs the grant %s", what, grant), map[string]any{"grant": grant})
}

// subscribe answers a subscribe to the catalogue or to a run.
func (d *automationDesk) subscribe(cl *client, channel string) (ahp.Snapshot, error) {
	if err := mayDo(cl, auth.AutomationRead, "reading "+channel); err != nil {
		return ahp.Snapshot{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var state any
	if ahp.IsAutomationsURI(channel) {
		st := ahp.AutomationState{Entries: []ahp.AutomationEntry{}}
		for _, it := range d.entries {
			st.Entries = append(st.Entries, d.entry(it))
		}
		state = st
	} else {
		r := d.run(channel)
		if r == nil {
			return ahp.Snapshot{}, fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, channel)
		}
		state = r.state
	}
	raw, err := json.Marshal(state)
	if err != nil {
		return ahp.Snapshot{}, fmt.Errorf("marshal %s: %w", channel, err)
	}
	seq := d.bus.Subscribe(cl, channel)
	return ahp.Snapshot{Resource: channel, State: json.RawMessage(raw), FromSeq: seq}, nil
}

// exists reports whether channel is the catalogue or a run the desk holds.
func (d *automationDesk) exists(channel string) bool {
	if ahp.IsAutomationsURI(channel) {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.run(channel) != nil
}

// run finds a run by its URI. d.mu must be held.
func (d *automationDesk) run(uri string) *runItem {
	it := d.item(d.runOf[uri])
	if it == nil {
		return nil
	}
	for i := range it.runs {
		if it.runs[i].state.Resource == uri {
			return &it.runs[i]
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Requests

// request answers the automation requests; ok is false for any other
// method.
func (d *automationDesk) request(ctx context.Context, cl *client, method string, params json.RawMessage) (any, bool, error) {
	switch method {
	case ahp.MethodListAutomationTriggerDefinitions:
		res, err := d.listTriggerDefinitions(cl, params)
		return res, true, err
	case ahp.MethodRunAutomation:
		res, err := d.runAutomation(ctx, cl, params)
		return res, true, err
	case ahp.MethodFetchAutomationRuns:
		res, err := d.fetchRuns(cl, params)
		return res, true, err
	}
	return nil, false, nil
}

func (d *automationDesk) currentGates() automation.Gates {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gates
}

// listTriggerDefinitions answers the event trigger types: none, since
// schedules are the protocol's own and ahpd defines no event source.
func (d *automationDesk) listTriggerDefinitions(cl *client, params json.RawMessage) (any, error) {
	var p ahp.ListAutomationTriggerDefinitionsParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireChannel(p.Channel, true); err != nil {
		return nil, err
	}
	if err := mayDo(cl, auth.AutomationRead, ahp.MethodListAutomationTriggerDefinitions); err != nil {
		return nil, err
	}
	if why := d.currentGates().Run(); why != "" {
		return nil, ahp.Errorf(ahp.ErrInvalidRequest, "%s", why)
	}
	return ahp.ListAutomationTriggerDefinitionsResult{Items: []json.RawMessage{}}, nil
}

func requireCatalogue(ch string) error {
	if ch == "" {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: required")
	}
	if !ahp.IsAutomationsURI(ch) {
		return ahp.Errorf(ahp.ErrInvalidParams, "params.channel: must be %s", ahp.AutomationsURI)
	}
	return nil
}

func notFound(resource string) error {
	return ahp.Errorf(ahp.ErrResourceNotFound, "Automation not found: %s", resource)
}

// fetchRuns acknowledges a request for older run history. An entry holds
// its whole retained history (the runHistoryLimit newest), so there is
// never an older page: no cursor is ever handed out, and one sent is
// unknown.
func (d *automationDesk) fetchRuns(cl *client, params json.RawMessage) (any, error) {
	var p ahp.FetchAutomationRunsParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireCatalogue(p.Channel); err != nil {
		return nil, err
	}
	if err := mayDo(cl, auth.AutomationRead, ahp.MethodFetchAutomationRuns); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if why := d.gates.Access(); why != "" {
		return nil, ahp.Errorf(ahp.ErrInvalidRequest, "%s", why)
	}
	if d.item(p.Automation) == nil {
		return nil, notFound(p.Automation)
	}
	if p.Cursor != "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.cursor: %q is not a cursor this host handed out", p.Cursor)
	}
	return struct{}{}, nil
}

// ---------------------------------------------------------------------------
// Actions

// dispatch takes a client's action on the catalogue or a run channel. It
// runs on the catalogue's lane.
func (d *automationDesk) dispatch(ctx context.Context, cl *client, channel string, a ahp.Action, origin *ahp.ActionOrigin) {
	refuse := func(reason string) { d.bus.Refuse(cl, channel, a, origin, reason) }
	if !ahp.IsClientDispatchable(a.ActionType()) {
		refuse("Action is not client-dispatchable.")
		return
	}
	if g := ahp.GrantFor(a.ActionType()); g != "" && !cl.principal.Can(g) {
		refuse(fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), g))
		return
	}
	var reason string
	switch a := a.(type) {
	case ahp.AutomationCreateRequested:
		reason = d.create(ctx, cl, channel, a)
	case ahp.AutomationUpdateRequested:
		reason = d.update(ctx, cl, channel, a)
	case ahp.AutomationRemoved:
		reason = d.remove(ctx, cl, channel, a, origin)
	case ahp.AutomationRunCancelRequested:
		reason = d.cancel(ctx, cl, channel)
	default:
		reason = fmt.Sprintf("%s is not an action of channel %s.", a.ActionType(), channel)
	}
	if reason != "" {
		refuse(reason)
	}
}

// takes reports whether channel takes actions of this type.
func automationChannelTakes(channel, actionType string) bool {
	if ahp.IsAutomationsURI(channel) {
		return strings.HasPrefix(actionType, "automation/")
	}
	return strings.HasPrefix(actionType, "automationRun/")
}

// mayAuthor: the deployment, or who created the automation.
func mayAuthor(cl *client, owner string) bool {
	return strings.HasPrefix(cl.principal.Sender, "root:") || cl.principal.Sender == owner
}

func (d *automationDesk) create(ctx context.Context, cl *client, channel string, a ahp.AutomationCreateRequested) string {
	if !ahp.IsAutomationsURI(channel) {
		return fmt.Sprintf("%s is not an action of channel %s.", a.ActionType(), channel)
	}
	if !ahp.IsAutomationURI(a.Resource) {
		return fmt.Sprintf("resource: %q is not an %s: URI", a.Resource, ahp.AutomationScheme)
	}
	if err := automation.Validate(a.Definition); err != nil {
		return err.Error()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if why := d.gates.Access(); why != "" {
		return why
	}
	if it := d.item(a.Resource); it != nil {
		if !automation.Same(it.def, a.Definition) || !mayAuthor(cl, it.rec.Owner) {
			return "Automation already exists: " + a.Resource
		}
		// The same definition again: nothing changes, and the entry is
		// said again, so the client hears its create was taken.
		d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
		return ""
	}
	if len(d.entries) >= automation.MaxAutomations {
		return fmt.Sprintf("This host keeps at most %d automations.", automation.MaxAutomations)
	}
	now := d.env.Now()
	it := &automationItem{def: a.Definition, rec: store.AutomationRecord{Resource: a.Resource, Owner: cl.principal.Sender,
		CreatedAt: now, ModifiedAt: now, NextRunAt: automation.NextRun(a.Definition, now)}}
	if err := d.storeItem(ctx, it); err != nil {
		return err.Error()
	}
	d.entries = append(d.entries, it)
	d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
	return ""
}

func (d *automationDesk) update(ctx context.Context, cl *client, channel string, a ahp.AutomationUpdateRequested) string {
	if !ahp.IsAutomationsURI(channel) {
		return fmt.Sprintf("%s is not an action of channel %s.", a.ActionType(), channel)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if why := d.gates.Access(); why != "" {
		return why
	}
	it := d.item(a.Resource)
	if it == nil || !mayAuthor(cl, it.rec.Owner) {
		return "Automation not found: " + a.Resource
	}
	def := automation.Apply(it.def, a.Changes)
	if err := automation.Validate(def); err != nil {
		return err.Error()
	}
	now := d.env.Now()
	next := *it
	next.def, next.rec.ModifiedAt, next.rec.NextRunAt = def, now, automation.NextRun(def, now)
	if err := d.storeItem(ctx, &next); err != nil {
		return err.Error()
	}
	*it = next
	d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
	return ""
}

func (d *automationDesk) remove(ctx context.Context, cl *client, channel string, a ahp.AutomationRemoved, origin *ahp.ActionOrigin) string {
	if !ahp.IsAutomationsURI(channel) {
		return fmt.Sprintf("%s is not an action of channel %s.", a.ActionType(), channel)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if why := d.gates.Access(); why != "" {
		return why
	}
	it := d.item(a.Resource)
	if it != nil && !mayAuthor(cl, it.rec.Owner) {
		return "Automation not found: " + a.Resource
	}
	if it != nil && inFlight(it) != nil {
		return "A run of " + a.Resource + " is in flight; cancel it first."
	}
	if it != nil {
		if _, err := d.env.Store.Automations().Delete(ctx, a.Resource); err != nil {
			return err.Error()
		}
		d.entries = slices.DeleteFunc(d.entries, func(e *automationItem) bool { return e == it })
		for _, r := range it.runs {
			delete(d.runOf, r.state.Resource)
			d.bus.DropChannel(r.state.Resource)
		}
	}
	// Removing an unknown automation is no change, said all the same.
	d.bus.Publish(ahp.AutomationsURI, a, origin)
	return ""
}

// storeItem writes it's record with its definition. d.mu must be held.
func (d *automationDesk) storeItem(ctx context.Context, it *automationItem) error {
	raw, err := json.Marshal(it.def)
	if err != nil {
		return fmt.Errorf("store automation %s: %w", it.rec.Resource, err)
	}
	it.rec.Definition = raw
	return d.env.Store.Automations().Put(ctx, it.rec)
}

func (d *automationDesk) storeRun(ctx context.Context, automationURI string, r runItem) error {
	raw, err := json.Marshal(r.state)
	if err != nil {
		return fmt.Errorf("store run %s: %w", r.state.Resource, err)
	}
	return d.env.Store.Automations().PutRun(ctx, store.AutomationRunRecord{Resource: r.state.Resource, Automation: automationURI,
		Seq: r.seq, RequestID: r.requestID, Terminal: r.state.Lifecycle.Terminal(), State: raw}, automation.RunHistoryLimit)
}

// ---------------------------------------------------------------------------
// Gates (root config)

// configure takes a root/configChanged that touches the automation gates:
// the gates are stored, then the root state changes, then every entry is
// said again when the operations it advertises changed.
func (d *automationDesk) configure(ctx context.Context, cl *client, a ahp.RootConfigChanged, origin *ahp.ActionOrigin) {
	d.mu.Lock()
	next, refused := automation.ConfigChange(d.gates, a.Config, a.Replace)
	if refused == "" && next != d.gates {
		refused = d.storeGates(ctx, next, a.Config[automation.MigrationKey])
	}
	if refused != "" {
		d.mu.Unlock()
		d.bus.Refuse(cl, ahp.RootURI, a, origin, refused)
		return
	}
	before := d.gates
	d.gates = next
	d.mu.Unlock()
	d.root.apply(a, origin)
	if slices.Equal(before.Operations(), next.Operations()) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, it := range d.entries {
		d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
	}
}

// storeGates writes the gates that changed; the refusal when it could not.
func (d *automationDesk) storeGates(ctx context.Context, next automation.Gates, migration any) string {
	st := d.env.Store
	if next.Enabled != d.gates.Enabled {
		if err := st.SetSetting(ctx, settingAutomationsEnabled, fmt.Sprint(next.Enabled)); err != nil {
			return err.Error()
		}
	}
	if next.Migrated && !d.gates.Migrated {
		raw, err := json.Marshal(migration)
		if err == nil {
			err = st.SetSetting(ctx, settingAutomationMigration, string(raw))
		}
		if err != nil {
			return err.Error()
		}
	}
	return ""
}

// touchesGates reports whether a root config change is the automations'
// business: it names a gate, or replaces the whole config.
func touchesGates(a ahp.RootConfigChanged) bool {
	_, enabled := a.Config[automation.EnabledKey]
	_, migration := a.Config[automation.MigrationKey]
	return enabled || migration || a.Replace
}

// ---------------------------------------------------------------------------
// The root config's automation keys

// automationConfigSchema describes the root config keys ahpd keeps: the
// automation gates.
var automationConfigSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"automationsEnabled":{"type":"boolean","title":"Automations enabled","default":false},` +
	`"vscode.automationMigration":{"type":"object","title":"Automation migration record"}}}`)

// keptConfig reports whether the root config keeps key.
func keptConfig(key string) bool {
	return key == automation.EnabledKey || key == automation.MigrationKey
}

// setAutomationGates seeds the root config with the stored gates.
func (r *rootDesk) setAutomationGates(enabled bool, migration any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	values := map[string]any{automation.EnabledKey: enabled}
	if migration != nil {
		values[automation.MigrationKey] = migration
	}
	r.state.Config = &ahp.RootConfig{Schema: automationConfigSchema, Values: values}
}

// keepOnlyKnownConfig drops the values the root config has no key for
// (they are taken and not kept: nothing stores them). r.mu must be held.
func (r *rootDesk) keepOnlyKnownConfig() {
	if r.state.Config == nil {
		return
	}
	maps.DeleteFunc(r.state.Config.Values, func(k string, _ any) bool { return !keptConfig(k) })
}

// ---------------------------------------------------------------------------
// Runs

// runAutomation starts a manual run; a requestId seen before answers the
// run it started.
func (d *automationDesk) runAutomation(ctx context.Context, cl *client, params json.RawMessage) (any, error) {
	var p ahp.RunAutomationParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := requireCatalogue(p.Channel); err != nil {
		return nil, err
	}
	if p.RequestID == "" {
		return nil, ahp.Errorf(ahp.ErrInvalidParams, "params.requestId: required")
	}
	if err := mayDo(cl, auth.AutomationRun, ahp.MethodRunAutomation); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if why := d.gates.Run(); why != "" {
		d.mu.Unlock()
		return nil, ahp.Errorf(ahp.ErrInvalidRequest, "%s", why)
	}
	it := d.item(p.Automation)
	if it == nil || !mayAuthor(cl, it.rec.Owner) {
		d.mu.Unlock()
		return nil, notFound(p.Automation)
	}
	for _, r := range it.runs {
		if r.requestID == p.RequestID {
			d.mu.Unlock()
			return ahp.RunAutomationResult{Resource: r.state.Resource}, nil
		}
	}
	d.mu.Unlock()
	uri, err := d.startRun(ctx, p.Automation, ahp.AutomationRunOrigin{Kind: ahp.RunOriginManual}, p.RequestID)
	if err != nil {
		return nil, err
	}
	return ahp.RunAutomationResult{Resource: uri}, nil
}

// startRun records a pending run, makes its session and starts its turn.
// It runs on the catalogue's lane. A run that cannot start is recorded as
// failed, with why; the error is only for a run that could not even be
// recorded.
func (d *automationDesk) startRun(ctx context.Context, automationURI string, origin ahp.AutomationRunOrigin, requestID string) (string, error) {
	d.mu.Lock()
	it := d.item(automationURI)
	if it == nil {
		d.mu.Unlock()
		return "", notFound(automationURI)
	}
	if r := inFlight(it); r != nil {
		d.mu.Unlock()
		return "", ahp.Errorf(ahp.ErrConflict, "a run of %s is in flight: %s", automationURI, r.state.Resource)
	}
	now := d.env.Now()
	r := runItem{requestID: requestID, seq: now.UnixNano(), owner: it.rec.Owner, state: ahp.AutomationRunState{
		Resource: ahp.AutomationRunScheme + ":/" + newID(), Automation: automationURI, Origin: origin,
		Lifecycle: ahp.AutomationRunLifecycle{Status: ahp.RunPending, CreatedAt: isoTime(now)},
		Sessions:  []string{}, Operations: []string{ahp.RunOpCancel}}}
	if len(it.runs) > 0 && r.seq <= it.runs[0].seq {
		r.seq = it.runs[0].seq + 1
	}
	if err := d.storeRun(ctx, automationURI, r); err != nil {
		d.mu.Unlock()
		return "", err
	}
	it.runs = append([]runItem{r}, it.runs...)
	d.trim(it)
	d.runOf[r.state.Resource] = automationURI
	d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
	def := it.def
	d.mu.Unlock()

	session, chatURI, turn, err := d.begin(ctx, r, def)
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.run(r.state.Resource)
	if cur == nil {
		return r.state.Resource, nil
	}
	now = d.env.Now()
	if err != nil {
		d.log.Warn("automation run could not start", "automation", automationURI, "run", r.state.Resource, "err", err)
		d.setLifecycle(ctx, cur, ended(cur.state.Lifecycle, ahp.RunFailed, now, err.Error()), []string{})
		return r.state.Resource, nil
	}
	cur.chat, cur.turn = chatURI, turn
	cur.state.Sessions = append(cur.state.Sessions, session)
	cur.state.PrimarySession = session
	l := cur.state.Lifecycle
	l.Status, l.StartedAt = ahp.RunRunning, isoTime(now)
	d.setLifecycle(ctx, cur, l, []string{ahp.RunOpCancel})
	d.bus.Publish(cur.state.Resource, ahp.AutomationRunSessionSet{Session: session}, nil)
	d.bus.Publish(cur.state.Resource, ahp.AutomationRunPrimarySessionChanged{PrimarySession: session}, nil)
	return r.state.Resource, nil
}

// trim drops the terminal runs past the history limit (the store trims
// its rows the same way). d.mu must be held.
func (d *automationDesk) trim(it *automationItem) {
	kept, terminal := it.runs[:0], 0
	for _, r := range it.runs {
		if r.state.Lifecycle.Terminal() {
			if terminal++; terminal > automation.RunHistoryLimit {
				delete(d.runOf, r.state.Resource)
				d.bus.DropChannel(r.state.Resource)
				continue
			}
		}
		kept = append(kept, r)
	}
	it.runs = kept
}

// setLifecycle stores and publishes a run's new lifecycle, and its entry.
// d.mu must be held.
func (d *automationDesk) setLifecycle(ctx context.Context, r *runItem, l ahp.AutomationRunLifecycle, ops []string) {
	r.state.Lifecycle, r.state.Operations = l, ops
	if err := d.storeRun(ctx, r.state.Automation, *r); err != nil {
		d.log.Error("store automation run", "run", r.state.Resource, "err", err)
	}
	d.bus.Publish(r.state.Resource, ahp.AutomationRunLifecycleChanged{Lifecycle: l, Operations: ops}, nil)
	if it := d.item(r.state.Automation); it != nil {
		d.trim(it)
		d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
	}
}

// finish ends a run whose turn ended (on the catalogue's lane).
func (d *automationDesk) finish(ctx context.Context, runURI, status, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.run(runURI)
	if r == nil || r.state.Lifecycle.Terminal() {
		return
	}
	d.setLifecycle(ctx, r, ended(r.state.Lifecycle, status, d.env.Now(), reason), []string{})
}

// cancel asks a run's turn to stop; its end arrives as the turn's end.
func (d *automationDesk) cancel(ctx context.Context, cl *client, channel string) string {
	d.mu.Lock()
	r := d.run(channel)
	if r == nil {
		d.mu.Unlock()
		return fmt.Sprintf("%s: %s", ahp.ErrResourceNotFound.Message, channel)
	}
	if it := d.item(r.state.Automation); it == nil || !mayAuthor(cl, it.rec.Owner) {
		d.mu.Unlock()
		return fmt.Sprintf("%s: %s", ahp.ErrResourceNotFound.Message, channel)
	}
	if r.state.Lifecycle.Terminal() {
		d.mu.Unlock()
		return "The run has ended; only a pending or running run can be cancelled."
	}
	if r.chat == "" {
		d.setLifecycle(ctx, r, ended(r.state.Lifecycle, ahp.RunCancelled, d.env.Now(), ""), []string{})
		d.mu.Unlock()
		return ""
	}
	chatURI, turn, owner := r.chat, r.turn, r.owner
	d.mu.Unlock()
	if err := d.stopTurn(ctx, owner, chatURI, turn); err != nil {
		return err.Error()
	}
	return ""
}

// ---------------------------------------------------------------------------
// The scheduler

// schedule is the scheduler's loop: every tick it queues a look for due
// schedule triggers on the catalogue's lane. It ends when the host closes.
func (d *automationDesk) schedule() {
	defer close(d.scheduled)
	t := time.NewTicker(d.tick)
	defer t.Stop()
	for {
		select {
		case <-d.closing:
			return
		case <-t.C:
			if d.lanes.idle(ahp.AutomationsURI) {
				// A look already queued covers this tick.
				d.lanes.push(ahp.AutomationsURI, func() { d.fireDue(context.Background()) })
			}
		}
	}
}

// fireDue starts a run for each enabled automation with a due schedule
// trigger (automation.Due decides; at most one run per automation at a
// time) and moves its nextRunAt past now.
func (d *automationDesk) fireDue(ctx context.Context) {
	select {
	case <-d.closing:
		return
	default:
	}
	type start struct {
		automation string
		origin     ahp.AutomationRunOrigin
	}
	var starts []start
	d.mu.Lock()
	now := d.env.Now()
	runnable := d.gates.Run() == ""
	for _, it := range d.entries {
		due := it.rec.NextRunAt
		if due.IsZero() || due.After(now) {
			continue
		}
		fired := false
		for _, tr := range it.def.Triggers {
			if fired || !runnable || !it.def.Enabled || tr.Kind != ahp.TriggerSchedule || tr.Schedule == nil {
				continue
			}
			s, err := automation.ParseSchedule(tr.Schedule.Expression, tr.Schedule.TimeZone)
			if err != nil {
				continue
			}
			first := s.Next(due.Add(-time.Second)) // the trigger's first occurrence at or after due
			if first.IsZero() || first.After(now) {
				continue
			}
			f := automation.Due(s, tr.MisfirePolicy, first, now, inFlight(it) != nil)
			if f.Run {
				fired = true
				starts = append(starts, start{it.rec.Resource, ahp.AutomationRunOrigin{Kind: ahp.RunOriginTrigger,
					TriggerID: tr.ID, ScheduledFor: isoTime(f.ScheduledFor), CatchUp: f.CatchUp}})
			} else {
				d.log.Info("schedule occurrence not run", "automation", it.rec.Resource, "trigger", tr.ID,
					"occurrence", first, "inFlight", inFlight(it) != nil, "misfirePolicy", tr.MisfirePolicy)
			}
		}
		it.rec.NextRunAt = automation.NextRun(it.def, now)
		if err := d.storeItem(ctx, it); err != nil {
			d.log.Error("store automation's next run", "automation", it.rec.Resource, "err", err)
		}
		d.bus.Publish(ahp.AutomationsURI, ahp.AutomationSet{Automation: d.entry(it)}, nil)
	}
	d.mu.Unlock()
	for _, s := range starts {
		if _, err := d.startRun(ctx, s.automation, s.origin, ""); err != nil {
			d.log.Warn("scheduled automation run not started", "automation", s.automation, "err", err)
		}
	}
}

// close waits for the scheduler, when it was started, and the run
// watchers to end (the host's closing channel is closed first).
func (d *automationDesk) close() {
	if d.started.Load() {
		<-d.scheduled
	}
	d.watching.Wait()
}
