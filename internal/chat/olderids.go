package chat

import "hash/maphash"

// olderIDs is a Bloom filter of the ids of a chat's turns older than its
// window. A turn start asks whether its id names an older turn (a repeated
// start is said again, not run); the filter answers "no" for a new id
// without the store read that cost the actor a query a turn once a chat had
// more turns than its window (issue 37's profile: a tenth of the actor's
// time under load). "Maybe" is answered by the store as before, so the
// filter never changes an answer: a false positive costs the read it
// saves otherwise.
//
// It holds about 10 bits a turn (a 1% false-positive rate at capacity):
// 100,000 older turns cost 122 KiB, against the ids themselves kept in
// memory at about 60 bytes each.
type olderIDs struct {
	seed maphash.Seed
	bits []uint64
	// n counts the ids added, capacity the most it takes at its rate.
	n, capacity int
}

const (
	olderIDsBitsPer = 10
	olderIDsHashes  = 7
	// olderIDsMin is the smallest capacity built, so a young chat's filter
	// is not rebuilt every few turns.
	olderIDsMin = 256
)

// newOlderIDs is an empty filter for up to capacity ids.
func newOlderIDs(capacity int) *olderIDs {
	capacity = max(capacity, olderIDsMin)
	words := (capacity*olderIDsBitsPer + 63) / 64
	return &olderIDs{seed: maphash.MakeSeed(), bits: make([]uint64, words), capacity: capacity}
}

// full reports whether the filter holds as many ids as it was built for;
// past it the false-positive rate climbs, and the caller builds a larger one.
func (f *olderIDs) full() bool { return f.n >= f.capacity }

// hashes are the two halves of id's hash that its olderIDsHashes bit
// positions are made of (p_i = h1 + i·h2 mod m; h2 odd).
func (f *olderIDs) hashes(id string) (h1, h2, m uint32) {
	h := maphash.String(f.seed, id)
	return uint32(h), uint32(h>>32) | 1, uint32(len(f.bits) * 64)
}

// add records id.
func (f *olderIDs) add(id string) {
	h1, h2, m := f.hashes(id)
	for i := range uint32(olderIDsHashes) {
		p := (h1 + i*h2) % m
		f.bits[p/64] |= 1 << (p % 64)
	}
	f.n++
}

// mayHold reports whether id may have been added; false means it never was.
func (f *olderIDs) mayHold(id string) bool {
	h1, h2, m := f.hashes(id)
	for i := range uint32(olderIDsHashes) {
		p := (h1 + i*h2) % m
		if f.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}
