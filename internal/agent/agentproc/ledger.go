package agentproc

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// A Ledger is the folder, under the data dir, where the daemon writes down
// each agent process group it runs: one file per group, named by its id,
// holding the leader's pid and start time. A daemon killed with SIGKILL
// cannot end its agents' groups (the parent-death signal reaches the
// leader only, not the shells and tools it started), so the next daemon
// ends what its ledger still lists before it starts anything
// (EndLeftovers). The zero Ledger writes nothing.
//
// A Ledger holds only its folder's name: any number of copies of it (one
// per backend) write the same files, and the files are the state.
type Ledger struct{ dir string }

// NewLedger is the ledger in dir, created when the first group is written.
func NewLedger(dir string) Ledger { return Ledger{dir: dir} }

// Dir is the ledger's folder, "" for the zero Ledger.
func (l Ledger) Dir() string { return l.dir }

// Start starts cmd (which SetGroup put in a group of its own) and writes
// its group down. The returned end, called once cmd has been waited for,
// kills what is left of the group (the tools and shells the agent left
// running) and crosses the group out. When the group cannot be written
// down, cmd is killed and the error returned: an agent the next start
// could not end is not started.
func (l Ledger) Start(cmd *exec.Cmd) (end func(), err error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	if l.dir == "" {
		return func() { killGroup(pid) }, nil
	}
	path := filepath.Join(l.dir, strconv.Itoa(pid))
	if err := l.write(path, pid); err != nil {
		SignalGroup(cmd, os.Kill)
		_ = cmd.Wait()
		return nil, fmt.Errorf("write the agent's process group down in %s: %w", l.dir, err)
	}
	return func() {
		killGroup(pid)
		_ = os.Remove(path)
	}, nil
}

func (l Ledger) write(path string, pid int) error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return err
	}
	start, _ := processStart(pid)
	return os.WriteFile(path, []byte(entry{pid: pid, start: start}.String()), 0o600)
}

// entry is one ledger file: the group leader's pid and its start time in
// clock ticks since boot (0 where the system does not say), which tells the
// leader from a later process that got the same pid.
type entry struct {
	pid   int
	start uint64
}

func (e entry) String() string { return fmt.Sprintf("%d %d\n", e.pid, e.start) }

// parseEntry reads a ledger file named name holding text.
func parseEntry(name, text string) (entry, error) {
	f := strings.Fields(text)
	if len(f) != 2 {
		return entry{}, fmt.Errorf("ledger entry %s: want \"<pid> <start>\", got %q", name, text)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 || f[0] != name {
		return entry{}, fmt.Errorf("ledger entry %s: bad pid %q", name, f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("ledger entry %s: bad start time %q", name, f[1])
	}
	return entry{pid: pid, start: start}, nil
}

// A leftover is what to do with one group an earlier daemon wrote down.
type leftover int

const (
	// leftoverGone: nothing of the group is left to end.
	leftoverGone leftover = iota
	// leftoverEnd: the leader, or members of its group, may live: kill
	// the group.
	leftoverEnd
)

// judge decides about a group written down as e, given whether a process
// with its pid lives now and, if so, its start time (ok false when the
// system does not say). A live pid started at another time is a later
// process that reused the number: the old group was empty by then (a pid
// is not handed out while a group of that id has members), so there is
// nothing to end and the stranger is left alone. A dead leader's group may
// still have members, which the kill reaches.
func judge(e entry, alive bool, start uint64, ok bool) leftover {
	switch {
	case !alive:
		return leftoverEnd
	case ok && e.start != 0 && start != e.start:
		return leftoverGone
	case !ok || e.start == 0:
		// No way to tell the leader from a stranger: leave it.
		return leftoverGone
	default:
		return leftoverEnd
	}
}

// EndLeftovers kills every group the ledger lists (see judge) and empties
// it. It is for a daemon's start, before any agent runs: the groups of
// this daemon's own agents would be killed too.
func (l Ledger) EndLeftovers(log *slog.Logger) (ended int, err error) {
	if l.dir == "" {
		return 0, nil
	}
	des, err := os.ReadDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the agent ledger %s: %w", l.dir, err)
	}
	var errs []error
	for _, de := range des {
		path := filepath.Join(l.dir, de.Name())
		if !de.Type().IsRegular() {
			errs = append(errs, fmt.Errorf("agent ledger %s: not a regular file", path))
			continue
		}
		text, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e, err := parseEntry(de.Name(), string(text))
		if err == nil {
			start, ok := processStart(e.pid)
			if judge(e, processAlive(e.pid), start, ok) == leftoverEnd && killGroup(e.pid) {
				ended++
				log.Warn("ended an agent process group an earlier daemon left running", "pgid", e.pid)
			}
		} else {
			errs = append(errs, err)
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
		}
	}
	return ended, errors.Join(errs...)
}
