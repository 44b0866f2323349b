package bus

import "github.com/ahpd/ahpd/internal/ahp"

// Observe sets f to be told of every published action: its channel, the
// action and how many subscribers it was queued to (the daemon's metrics
// and turn logs). f runs under the bus's sequence lock, so it must be
// quick and must not publish.
func (b *Bus) Observe(f func(channel string, action ahp.Action, delivered int)) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	b.observe = f
}

// LogSize is how many envelopes, and how many bytes of them, the replay
// log holds now.
func (b *Bus) LogSize() (entries, bytes int) {
	b.seqMu.Lock()
	defer b.seqMu.Unlock()
	return len(b.log) - b.logHead, b.logBytes
}
