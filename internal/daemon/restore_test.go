package daemon_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// TestRequestsWaitForTheCatalogue: the daemon listens before it has listed
// its stored sessions (issue 34, lazy start-up), and a client that
// connects at once is answered from the whole catalogue, never from part
// of it: its first listSessions lists every stored session.
func TestRequestsWaitForTheCatalogue(t *testing.T) {
	dir := t.TempDir()
	const stored = 300
	seedStore(t, dir, stored, 0)
	d, _ := startOn(t, dir)
	w := dialWatcher(t, d.URL())
	w.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"early"}}`)
	w.send(t, `{"jsonrpc":"2.0","id":2,"method":"listSessions","params":{"channel":"ahp-root://","limit":1000}}`)
	for {
		_ = w.ws.SetReadDeadline(time.Now().Add(ahptest.Timeout))
		_, data, err := w.ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			ID     int `json:"id"`
			Result struct {
				Items []ahp.SessionSummary `json:"items"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &res) != nil || res.ID != 2 {
			continue
		}
		if len(res.Result.Items) != stored {
			t.Fatalf("the first listSessions listed %d sessions, want all %d", len(res.Result.Items), stored)
		}
		return
	}
}

// TestRestoreFailureStopsTheDaemon: a store whose sessions cannot be read
// after the daemon began to listen is not served half: Failed says why,
// and the daemon closes.
func TestRestoreFailureStopsTheDaemon(t *testing.T) {
	dir := t.TempDir()
	seedStore(t, dir, 3, 0)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "ahpd.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE sessions SET working_directories = '{not a list' WHERE rowid = 2`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	d, _ := startOn(t, dir)
	select {
	case err := <-d.Failed():
		if err == nil {
			t.Fatal("Failed delivered no error")
		}
		t.Logf("failed as it should: %v", err)
	case <-time.After(ahptest.Timeout):
		t.Fatal("a store whose sessions cannot be read did not stop the daemon")
	}
	ctx, cancel := context.WithTimeout(context.Background(), ahptest.Timeout)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
