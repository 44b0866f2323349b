// Package reduce holds the pure reducers of the AHP state channels: Root,
// Session and Chat. Each applies one action to a state in place. The chat
// and session actors call them for every action they publish; the
// conformance test runs them against the upstream fixtures.
//
// Reducers are deterministic: no clock, no randomness. Time comes from the
// actions (a chat's modifiedAt is the turn's startedAt, then startedAt plus
// the turn's duration when it ends). Unknown actions, and actions that do not
// apply to the state (wrong turn, unknown id), are no-ops.
//
// Sharing rule: a reducer may keep values taken from an action (slices,
// maps, pointers) in the state, but it never writes through memory it did
// not allocate itself. Every update replaces the changed element with a
// fresh copy and every removal builds a new slice. So a published action
// may be marshalled on another goroutine while its owner keeps reducing.
// Snapshots of the state, however, must be taken (marshalled or copied) by
// the owner.
package reduce
