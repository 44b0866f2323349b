package cofold

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// modelsProvider is an OpenAI-compatible GET /models on 127.0.0.1 whose
// list the test changes, and which can be made to fail.
type modelsProvider struct {
	mu    sync.Mutex
	ids   []string
	fail  bool
	asked int
}

func (p *modelsProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	if p.fail {
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
		return
	}
	var data []map[string]any
	for _, id := range p.ids {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "test"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func (p *modelsProvider) set(ids []string, fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids, p.fail = ids, fail
}

func (p *modelsProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

func modelIDs(a *Agent) []string {
	var out []string
	for _, m := range a.Info(context.Background()).Models {
		out = append(out, m.ID)
	}
	return out
}

// TestModelListsRefresh: the first Info asks the provider; a model it adds
// is offered once the list is older than modelsRefresh (asked in the
// background, never before), one it drops is no longer offered, and a
// failed listing keeps what the provider listed before. (Issue 35 §2.)
func TestModelListsRefresh(t *testing.T) {
	prov := &modelsProvider{ids: []string{"m1"}}
	srv := httptest.NewServer(prov)
	defer srv.Close()
	s, err := ParseSettings(json.RawMessage(`{"providers":[{"name":"p","api":"openai","baseUrl":"` + srv.URL + `/v1","apiKey":"k","models":[{"id":"configured"}]}],"maxRetries":0}`))
	if err != nil {
		t.Fatal(err)
	}
	a := New(s)
	var mu sync.Mutex
	clock := time.Unix(1_000_000, 0)
	a.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	// settled waits for the background listing the last Info started.
	settled := func(asked int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			a.mu.Lock()
			done := !a.listing
			a.mu.Unlock()
			if done && prov.count() >= asked {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the background listing did not end (asked %d times)", prov.count())
			}
			time.Sleep(5 * time.Millisecond) // polls the background listing
		}
	}

	if got := modelIDs(a); !slices.Equal(got, []string{"p/configured", "p/m1"}) {
		t.Fatalf("first Info: %v", got)
	}
	prov.set([]string{"m1", "m2"}, false)
	advance(modelsRefresh - time.Second)
	if got := modelIDs(a); !slices.Equal(got, []string{"p/configured", "p/m1"}) || prov.count() != 1 {
		t.Fatalf("before modelsRefresh: %v, provider asked %d times; want the old list, asked once", got, prov.count())
	}
	advance(2 * time.Second)
	modelIDs(a) // stale: starts the refresh, answers at once
	settled(2)
	if got := modelIDs(a); !slices.Equal(got, []string{"p/configured", "p/m1", "p/m2"}) {
		t.Fatalf("after the refresh: %v, want the added model", got)
	}
	prov.set(nil, true)
	advance(modelsRefresh)
	modelIDs(a)
	settled(3)
	if got := modelIDs(a); !slices.Equal(got, []string{"p/configured", "p/m1", "p/m2"}) {
		t.Fatalf("after a failed listing: %v, want the last list kept", got)
	}
	prov.set([]string{"m2"}, false)
	advance(modelsRefresh)
	modelIDs(a)
	settled(4)
	if got := modelIDs(a); !slices.Equal(got, []string{"p/configured", "p/m2"}) {
		t.Fatalf("after the provider dropped m1: %v", got)
	}
}
