package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// An automation reads back as stored across a reopen, its runs newest
// first, a run's update replacing its row.
func TestAutomationsRoundTripAcrossReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	a := AutomationRecord{Resource: "ahp-automation:/a", Owner: "root:h", Definition: json.RawMessage(`{"title":"A"}`),
		CreatedAt: at(1), ModifiedAt: at(2), NextRunAt: at(3)}
	b := AutomationRecord{Resource: "ahp-automation:/b", Owner: "user:bob", Definition: json.RawMessage(`{"title":"B"}`),
		CreatedAt: at(4), ModifiedAt: at(4)}
	must(t, s.Automations().Put(ctx, b))
	must(t, s.Automations().Put(ctx, a))
	run := AutomationRunRecord{Resource: "ahp-automation-run:/1", Automation: a.Resource, Seq: 1, RequestID: "r1", State: json.RawMessage(`{"s":1}`)}
	must(t, s.Automations().PutRun(ctx, run, 5))
	run.Terminal, run.State = true, json.RawMessage(`{"s":2}`)
	must(t, s.Automations().PutRun(ctx, run, 5))
	must(t, s.Close())
	s, _ = openAt(t, path)
	list, err := s.Automations().List(ctx)
	if err != nil || len(list) != 2 || !reflect.DeepEqual(list[0], a) || !reflect.DeepEqual(list[1], b) {
		t.Fatalf("List after reopen = %+v, %v; want %+v then %+v", list, err, a, b)
	}
	runs, err := s.Automations().Runs(ctx, a.Resource)
	if err != nil || len(runs) != 1 || !reflect.DeepEqual(runs[0], run) {
		t.Fatalf("Runs = %+v, %v; want [%+v]", runs, err, run)
	}
	if ok, err := s.Automations().Delete(ctx, a.Resource); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if runs, _ := s.Automations().Runs(ctx, a.Resource); len(runs) != 0 {
		t.Fatalf("runs outlived their automation: %+v", runs)
	}
	if ok, err := s.Automations().Delete(ctx, a.Resource); ok || err != nil {
		t.Fatalf("second Delete = %v, %v; want false", ok, err)
	}
}

// The run history keeps the newest terminal runs up to the limit; a run
// still in flight is never trimmed.
func TestAutomationRunsTrimmedToTheHistoryLimit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	a := AutomationRecord{Resource: "ahp-automation:/a", Owner: "root:h", Definition: json.RawMessage(`{}`), CreatedAt: time.Unix(1, 0), ModifiedAt: time.Unix(1, 0)}
	must(t, s.Automations().Put(ctx, a))
	inflight := AutomationRunRecord{Resource: "ahp-automation-run:/0", Automation: a.Resource, Seq: 0, State: json.RawMessage(`{}`)}
	must(t, s.Automations().PutRun(ctx, inflight, 3))
	for i := 1; i <= 6; i++ {
		r := AutomationRunRecord{Resource: fmt.Sprintf("ahp-automation-run:/%d", i), Automation: a.Resource, Seq: int64(i), Terminal: true, State: json.RawMessage(`{}`)}
		must(t, s.Automations().PutRun(ctx, r, 3))
	}
	runs, err := s.Automations().Runs(ctx, a.Resource)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Resource)
	}
	want := []string{"ahp-automation-run:/6", "ahp-automation-run:/5", "ahp-automation-run:/4", "ahp-automation-run:/0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("runs kept = %v, want %v", got, want)
	}
}

// A definition that is not JSON is refused, not stored.
func TestAutomationsRefuseInvalidJSON(t *testing.T) {
	s, _ := openTemp(t)
	err := s.Automations().Put(context.Background(), AutomationRecord{Resource: "ahp-automation:/x", Definition: json.RawMessage(`{`)})
	if err == nil {
		t.Fatal("a definition that is not JSON was stored")
	}
}
