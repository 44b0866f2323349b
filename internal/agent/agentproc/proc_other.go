//go:build !linux

package agentproc

import "syscall"

// setDeathSignal: no parent-death signal here; the next start ends what a
// killed daemon left (Ledger.EndLeftovers), where it can tell the group.
func setDeathSignal(*syscall.SysProcAttr) {}

// processStart: this system does not say, so EndLeftovers leaves a live
// pid alone rather than risk killing a stranger.
func processStart(int) (uint64, bool) { return 0, false }
