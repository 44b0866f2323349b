package host

import (
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

// summaryIndex is the catalogue: every session's summary by URI, and the
// URIs in listSessions' order (most recently modified first, then by URI),
// kept sorted as summaries change so a page costs its own size, not the
// catalogue's (issue 18: each page copied and sorted every summary).
// Guarded by the catalogue's mutex (catalogue.go).
type summaryIndex struct {
	byURI map[string]ahp.SessionSummary
	order []string
}

func newSummaryIndex() summaryIndex {
	return summaryIndex{byURI: make(map[string]ahp.SessionSummary)}
}

// before reports whether a lists before b.
func before(a, b ahp.SessionSummary) bool {
	if a.ModifiedAt != b.ModifiedAt {
		return a.ModifiedAt > b.ModifiedAt
	}
	return a.Resource < b.Resource
}

// position is where sum stands, or would stand, in order.
func (x *summaryIndex) position(sum ahp.SessionSummary) int {
	i, _ := slices.BinarySearchFunc(x.order, sum, func(uri string, target ahp.SessionSummary) int {
		cur := x.byURI[uri]
		switch {
		case cur.Resource == target.Resource:
			return 0
		case before(cur, target):
			return -1
		}
		return 1
	})
	return i
}

func (x *summaryIndex) get(uri string) (ahp.SessionSummary, bool) {
	s, ok := x.byURI[uri]
	return s, ok
}

// put adds or replaces a session's summary and moves it to its place.
func (x *summaryIndex) put(uri string, sum ahp.SessionSummary) {
	sum.Resource = uri
	if old, ok := x.byURI[uri]; ok {
		if old.ModifiedAt == sum.ModifiedAt {
			x.byURI[uri] = sum // same place
			return
		}
		x.remove(old)
	}
	i := x.position(sum)
	x.byURI[uri] = sum
	x.order = slices.Insert(x.order, i, uri)
}

// putAll adds many summaries at once and sorts the order once: restore's
// bulk load, where put's insertion per summary would copy the order a
// thousand times.
func (x *summaryIndex) putAll(sums []ahp.SessionSummary) {
	for _, sum := range sums {
		if _, ok := x.byURI[sum.Resource]; !ok {
			x.order = append(x.order, sum.Resource)
		}
		x.byURI[sum.Resource] = sum
	}
	slices.SortFunc(x.order, func(a, b string) int {
		sa, sb := x.byURI[a], x.byURI[b]
		switch {
		case a == b:
			return 0
		case before(sa, sb):
			return -1
		}
		return 1
	})
}

// drop forgets a session.
func (x *summaryIndex) drop(uri string) {
	if old, ok := x.byURI[uri]; ok {
		x.remove(old)
		delete(x.byURI, uri)
	}
}

func (x *summaryIndex) remove(old ahp.SessionSummary) {
	i := x.position(old)
	if i < len(x.order) && x.order[i] == old.Resource {
		x.order = slices.Delete(x.order, i, i+1)
		return
	}
	// Not where its summary says (it cannot happen while put is the only
	// writer); find it the slow way rather than leave it listed twice.
	if j := slices.Index(x.order, old.Resource); j >= 0 {
		x.order = slices.Delete(x.order, j, j+1)
	}
}

// page is up to limit summaries from offset, in order, and whether more
// follow.
func (x *summaryIndex) page(offset, limit int) ([]ahp.SessionSummary, bool) {
	if offset >= len(x.order) {
		return []ahp.SessionSummary{}, false
	}
	end := min(offset+limit, len(x.order))
	out := make([]ahp.SessionSummary, 0, end-offset)
	for _, uri := range x.order[offset:end] {
		out = append(out, x.byURI[uri])
	}
	return out, end < len(x.order)
}

// all calls fn for every session, in no order.
func (x *summaryIndex) all(fn func(uri string, sum ahp.SessionSummary)) {
	for uri, sum := range x.byURI {
		fn(uri, sum)
	}
}
