package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// walIndex builds a WAL index's first bytes: both header copies holding
// version, isInit, mxFrame, then nBackfill.
func walIndex(version uint32, isInit byte, mxFrame, backfilled uint32) []byte {
	buf := make([]byte, walIndexReadSize)
	header := buf[:walIndexHeaderSize]
	binary.NativeEndian.PutUint32(header, version)
	header[walIsInitAt] = isInit
	binary.NativeEndian.PutUint32(header[walMxFrameAt:], mxFrame)
	copy(buf[walIndexHeaderSize:], header)
	binary.NativeEndian.PutUint32(buf[walBackfillAt:], backfilled)
	return buf
}

// TestWALBacklogReadsTheIndexHeader: the frames waiting to be copied back
// are read from the WAL index's header, and a header that is torn (its two
// copies differ), not yet set up, of another version, or short is refused
// rather than read as a number.
func TestWALBacklogReadsTheIndexHeader(t *testing.T) {
	torn := walIndex(walIndexVersion, 1, 1500, 200)
	torn[walIndexHeaderSize+walMxFrameAt]++
	for _, tc := range []struct {
		name            string
		index           []byte
		frames, backlog int
		err             bool
	}{
		{name: "frames waiting", index: walIndex(walIndexVersion, 1, 1500, 200), frames: 1500, backlog: 1300},
		{name: "all copied back", index: walIndex(walIndexVersion, 1, 1500, 1500), frames: 1500, backlog: 0},
		{name: "empty WAL", index: walIndex(walIndexVersion, 1, 0, 0), frames: 0, backlog: 0},
		{name: "torn header", index: torn, err: true},
		{name: "not set up", index: walIndex(walIndexVersion, 0, 1500, 200), err: true},
		{name: "another version", index: walIndex(walIndexVersion+1, 1, 1500, 200), err: true},
		{name: "short", index: walIndex(walIndexVersion, 1, 1500, 200)[:walIndexHeaderSize], err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames, backlog, err := walBacklog(bytes.NewReader(tc.index))
			if tc.err {
				if err == nil {
					t.Fatalf("walBacklog = %d, %d, nil; want an error", frames, backlog)
				}
				return
			}
			if err != nil || frames != tc.frames || backlog != tc.backlog {
				t.Fatalf("walBacklog = %d, %d, %v; want %d, %d", frames, backlog, err, tc.frames, tc.backlog)
			}
		})
	}
	if _, _, err := walBacklog(bytes.NewReader(torn)); !errors.Is(err, errWALIndex) {
		t.Errorf("torn header: %v, want errWALIndex", err)
	}
}

// TestCheckpointerCopiesTheWALBackOffTheCommitPath: the store's own
// connections checkpoint only past walBackstopFrames; a WAL past
// walCheckpointFrames is copied back by the checkpointer, and what was
// committed reads back whole after it.
func TestCheckpointerCopiesTheWALBackOffTheCommitPath(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	var auto int
	must(t, s.db.pool.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto))
	if auto != walBackstopFrames {
		t.Fatalf("wal_autocheckpoint = %d, want %d", auto, walBackstopFrames)
	}
	_, chat := seed(t, s, "ahp://s/ckpt")
	body := body200() // about ten WAL frames a turn
	const turns = 200
	for i := range turns {
		r := TurnRecord{Chat: chat, ID: fmt.Sprintf("t%d", i), Seq: i, State: TurnComplete, Sender: "user:1", Point: "p", Body: body, BodyMarshalled: true}
		must(t, s.Commit(ctx, func(ctx context.Context, s *Store) error { return s.PutTurn(ctx, r) }))
	}
	shm, err := os.Open(path + "-shm")
	must(t, err)
	defer shm.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// A checkpoint runs once walCheckpointFrames wait, and leaves
		// fewer waiting.
		frames, backlog, err := walBacklog(shm)
		if err == nil && s.Stats().Checkpoints > 0 && backlog < walCheckpointFrames {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint: %d checkpoints, WAL %d frames, %d not copied back (%v)", s.Stats().Checkpoints, frames, backlog, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err := s.CountTurns(ctx, chat)
	must(t, err)
	if n != turns {
		t.Fatalf("%d turns stored, want %d", n, turns)
	}
	last, ok, err := s.Turn(ctx, chat, fmt.Sprintf("t%d", turns-1))
	must(t, err)
	if !ok || !bytes.Equal(last.Body, body) {
		t.Fatalf("the last turn reads back as %v %d bytes, want its body", ok, len(last.Body))
	}
}
