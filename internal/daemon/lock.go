package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// lockName is the file in the data dir a running daemon holds an
// exclusive lock on, with its pid inside: two daemons sharing one
// database would each believe they own every chat.
const lockName = "ahpd.lock"

// DataDirLockedError is returned by Start when another daemon holds the
// data dir.
type DataDirLockedError struct {
	Dir string
	PID int // 0 when the holder's pid could not be read
}

func (e *DataDirLockedError) Error() string {
	who := "another ahpd"
	if e.PID > 0 {
		who = "ahpd pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("data dir %s is in use by %s", e.Dir, who)
}

// lockDataDir takes the data dir's lock and writes this process's pid into
// it. The lock is the kernel's (flock), so a daemon killed with -9 leaves
// no stale lock behind.
func lockDataDir(dir string) (*flock.Flock, error) {
	path := filepath.Join(dir, lockName)
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if !ok {
		pid := 0
		if b, err := os.ReadFile(path); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return nil, &DataDirLockedError{Dir: dir, PID: pid}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = l.Unlock()
		return nil, fmt.Errorf("lock data dir %s: write pid: %w", dir, err)
	}
	return l, nil
}
