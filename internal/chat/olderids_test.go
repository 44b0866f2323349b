package chat

import (
	"fmt"
	"testing"
)

// TestOlderIDsNeverMissesAnAddedID: the filter of older turn ids answers
// "maybe" for every id it was given (a "no" would let a repeated start of
// an old turn run as a new one), and "no" for nearly every other id, up to
// its capacity (a "maybe" costs the store read the filter spares).
func TestOlderIDsNeverMissesAnAddedID(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		add      int
		// maxFalse is the most false positives allowed among 20,000 ids
		// never added, in thousandths.
		maxFalse int
	}{
		{"empty", 0, 0, 0},
		{"a young chat", 0, 10, 2},
		{"at its minimum capacity", 0, olderIDsMin, 20},
		{"half full", 20000, 10000, 5},
		{"full", 20000, 20000, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newOlderIDs(tc.capacity)
			for i := range tc.add {
				f.add(fmt.Sprintf("turn-%d", i))
			}
			for i := range tc.add {
				if id := fmt.Sprintf("turn-%d", i); !f.mayHold(id) {
					t.Fatalf("%s was added, the filter says it never was", id)
				}
			}
			const others = 20000
			falses := 0
			for i := range others {
				if f.mayHold(fmt.Sprintf("other-%d", i)) {
					falses++
				}
			}
			if falses*1000 > tc.maxFalse*others {
				t.Errorf("%d false positives in %d (%.2f%%), want at most %.1f%%", falses, others, 100*float64(falses)/others, float64(tc.maxFalse)/10)
			}
			if want := tc.add >= max(tc.capacity, olderIDsMin); f.full() != want {
				t.Errorf("full() = %v after %d of %d, want %v", f.full(), tc.add, max(tc.capacity, olderIDsMin), want)
			}
		})
	}
}
