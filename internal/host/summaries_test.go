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
