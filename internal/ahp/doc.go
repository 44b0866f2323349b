// Package ahp is the Agent Host Protocol on the wire, with no I/O: the state
// of each channel (root, session, chat, and beside them terminals,
// changesets, annotations, resource watches and canvases), the actions that
// change it and the envelopes that carry them, the commands with their
// params and results, the protocol's errors and codes, its URIs, and the
// versions a connection may speak.
//
// Each action is one row of actions.table (type, struct, the version it came
// in, whether a client may dispatch it, the grant it needs); go generate
// (internal/ahp/internal/actiongen) writes actions_gen.go from it: the action
// type constants, their methods, the decoder, and each action's version,
// dispatchability and grant. A test fails when that file is stale.
package ahp
