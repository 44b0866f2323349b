package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHostToolRequestEndedOnStop: a host-tools request its agent holds
// open (as the Claude ACP adapter holds a streamable MCP POST) ends when
// the daemon stops, so the HTTP server's shutdown does not wait for it
// until its deadline; a request that is not held is served as usual.
func TestHostToolRequestEndedOnStop(t *testing.T) {
	t.Parallel()
	stop, stopTools := context.WithCancel(context.Background())
	held := make(chan struct{})
	h := endedOnStop(stop, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			close(held)
			<-r.Context().Done() // as the MCP handler waits for its responses
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	res, err := http.Get(srv.URL)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("a plain request: %v %v", res, err)
	}
	res.Body.Close()

	go func() {
		if res, err := http.Get(srv.URL + "?hold"); err == nil {
			res.Body.Close()
		}
	}()
	<-held
	stopTools()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited on the held request: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %s", took)
	}
}
