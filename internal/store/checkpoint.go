package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
)

// Checkpointing the WAL off the writer's path.
//
// SQLite's own policy copies the WAL back into the database file from
// inside the commit that takes it past 1,000 frames: that commit waits for
// the copy and two fsyncs, milliseconds that land on whichever turn
// committed then (about two fifths of a 200-part turn's commit time on
// average, docs/PERFORMANCE.md). Here the store's connections leave that to
// a goroutine of their own: writes nudge it as they let the writer token
// go (one in walNudgeEvery), and it checkpoints (PASSIVE: it never waits
// for, nor blocks, a writer or a reader) once the WAL holds
// walCheckpointFrames not yet copied.
// How many frames wait is read from the WAL index (the -shm file) that
// SQLite keeps for every connection, in its documented format.
//
// Under a steady stream of commits the WAL is not started over (SQLite
// does that at a write that finds every frame copied back), so it grows to
// walBackstopFrames, where a commit's own checkpoint copies the few frames
// left and the next write starts it over; copying those last frames from
// here, holding the writer token, cost the commits more than it saved
// (measured). The same backstop bounds the WAL should the index ever be
// unreadable.

const (
	// walCheckpointFrames is the backlog the checkpointer copies back at:
	// SQLite's default autocheckpoint.
	walCheckpointFrames = 1000
	// walBackstopFrames is the WAL length past which a committing
	// connection checkpoints itself, as SQLite does by default, when the
	// checkpointer has not kept up or cannot read the WAL index.
	walBackstopFrames = 4 * walCheckpointFrames
	// walNudgeEvery is how many writes pass between two looks at the WAL
	// index: a write adds a frame at least, so the checkpointer lags the
	// threshold by a few writes at most, and a busy store does not wake
	// it (and read the index) for every commit.
	walNudgeEvery = 8
)

// checkpointer copies the WAL into the database file in the background.
type checkpointer struct {
	db     *database
	shm    string
	logger *slog.Logger

	// nudged wakes the loop after a write; stop ends it and done says it
	// has ended.
	nudged chan struct{}
	stop   chan struct{}
	done   chan struct{}

	// writes counts the nudges, of which one in walNudgeEvery wakes the
	// loop.
	writes atomic.Uint64
	// runs counts the checkpoints run (Stats).
	runs atomic.Uint64
}

func newCheckpointer(db *database, path string, logger *slog.Logger) *checkpointer {
	return &checkpointer{
		db:     db,
		shm:    path + "-shm",
		logger: logger,
		nudged: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// nudge tells the loop a write committed, one write in walNudgeEvery; it
// never blocks (a nudge pending already covers this one).
func (c *checkpointer) nudge() {
	if c.writes.Add(1)%walNudgeEvery != 0 {
		return
	}
	select {
	case c.nudged <- struct{}{}:
	default:
	}
}

// close stops the loop and waits for a checkpoint it is running.
func (c *checkpointer) close() {
	close(c.stop)
	<-c.done
}

func (c *checkpointer) loop() {
	defer close(c.done)
	var shm *os.File
	defer func() {
		if shm != nil {
			shm.Close()
		}
	}()
	warned := false
	for {
		select {
		case <-c.stop:
			return
		case <-c.nudged:
		}
		if shm == nil {
			f, err := os.Open(c.shm)
			if err != nil {
				if !warned {
					c.logger.Warn("cannot read the WAL index; SQLite checkpoints from the commit path", "err", err, "frames", walBackstopFrames)
					warned = true
				}
				continue
			}
			shm = f
		}
		_, backlog, err := walBacklog(shm)
		if err != nil {
			// Torn by a writer mid-update, or not yet written: the next
			// write nudges again.
			continue
		}
		if backlog >= walCheckpointFrames {
			c.checkpoint()
		}
	}
}

// checkpoint runs one PASSIVE checkpoint: whatever frames no reader still
// needs are copied back, without waiting for anyone.
func (c *checkpointer) checkpoint() {
	var busy, frames, copied int
	err := c.db.pool.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	if err != nil {
		c.logger.Warn("checkpoint the WAL", "err", err)
		return
	}
	c.runs.Add(1)
}

// The WAL index's header (https://sqlite.org/walformat.html, "The
// WAL-Index Header"): two copies of a 48-byte header, equal unless a
// writer is changing them, then the checkpoint information. Integers are
// in the host's byte order.
const (
	walIndexHeaderSize = 48
	walIndexVersion    = 3007000
	walMxFrameAt       = 16 // frames in the WAL
	walIsInitAt        = 12
	walBackfillAt      = 2 * walIndexHeaderSize // nBackfill, the checkpoint information's first field: frames copied back
	walIndexReadSize   = walBackfillAt + 4
)

var errWALIndex = errors.New("WAL index header not readable")

// walBacklog reads how many frames the WAL holds and how many of them are
// not yet copied back into the database file.
func walBacklog(shm io.ReaderAt) (frames, backlog int, err error) {
	var buf [walIndexReadSize]byte
	if _, err := shm.ReadAt(buf[:], 0); err != nil {
		return 0, 0, fmt.Errorf("read WAL index: %w", err)
	}
	first, second := buf[:walIndexHeaderSize], buf[walIndexHeaderSize:2*walIndexHeaderSize]
	if !bytes.Equal(first, second) || first[walIsInitAt] != 1 ||
		binary.NativeEndian.Uint32(first) != walIndexVersion {
		return 0, 0, errWALIndex
	}
	mx := binary.NativeEndian.Uint32(first[walMxFrameAt:])
	backfilled := binary.NativeEndian.Uint32(buf[walBackfillAt:])
	if backfilled >= mx {
		return int(mx), 0, nil
	}
	return int(mx), int(mx - backfilled), nil
}
