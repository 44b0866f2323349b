package host

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// TestSummaryIndexKeepsListOrder: however summaries are added, changed and
// dropped, the index lists them as a full sort would (most recently
// modified first, then by URI), each once.
func TestSummaryIndexKeepsListOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newSummaryIndex()
	live := map[string]ahp.SessionSummary{}
	for step := range 5000 {
		uri := fmt.Sprintf("ahp-session:/s%03d", rng.IntN(300))
		switch rng.IntN(4) {
		case 0:
			x.drop(uri)
			delete(live, uri)
		default:
			sum := ahp.SessionSummary{Resource: uri, Title: fmt.Sprint(step), ModifiedAt: fmt.Sprintf("2026-12-04T00:%02d:00Z", rng.IntN(20))}
			x.put(uri, sum)
			live[uri] = sum
		}
	}
	want := make([]ahp.SessionSummary, 0, len(live))
	for _, s := range live {
		want = append(want, s)
	}
	slices.SortFunc(want, func(a, b ahp.SessionSummary) int {
		switch {
		case a.Resource == b.Resource:
			return 0
		case before(a, b):
			return -1
		}
		return 1
	})
	var got []ahp.SessionSummary
	for offset := 0; ; {
		page, more := x.page(offset, 37)
		got = append(got, page...)
		offset += len(page)
		if !more {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d listed, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Resource != want[i].Resource || got[i].Title != want[i].Title {
			t.Fatalf("at %d: %s (%s), want %s (%s)", i, got[i].Resource, got[i].ModifiedAt, want[i].Resource, want[i].ModifiedAt)
		}
	}
}

// TestSummaryIndexBulkLoadListsAsPut: restore's bulk load (putAll), on an
// index that already holds a few sessions (those opened eagerly), lists
// exactly what putting each summary alone would, and a put after it still
// finds its place.
func TestSummaryIndexBulkLoadListsAsPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	one, bulk := newSummaryIndex(), newSummaryIndex()
	var sums []ahp.SessionSummary
	for i := range 500 {
		uri := fmt.Sprintf("ahp-session:/s%03d", i)
		sum := ahp.SessionSummary{Resource: uri, Title: fmt.Sprint(i), ModifiedAt: fmt.Sprintf("2026-12-04T00:%02d:00Z", rng.IntN(30))}
		one.put(uri, sum)
		if i%50 == 0 {
			bulk.put(uri, sum) // opened before the bulk load
		}
		sums = append(sums, sum)
	}
	bulk.putAll(sums)
	late := ahp.SessionSummary{Resource: "ahp-session:/late", ModifiedAt: "2026-12-04T00:15:30Z"}
	one.put(late.Resource, late)
	bulk.put(late.Resource, late)
	a, _ := one.page(0, 1000)
	b, _ := bulk.page(0, 1000)
	if len(a) != len(b) {
		t.Fatalf("bulk lists %d, one by one %d", len(b), len(a))
	}
	for i := range a {
		if a[i].Resource != b[i].Resource {
			t.Fatalf("at %d: bulk lists %s, one by one %s", i, b[i].Resource, a[i].Resource)
		}
	}
}
