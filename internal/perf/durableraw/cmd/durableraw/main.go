// Command durableraw runs the durable raw turn server (internal/perf/durableraw)
// on 127.0.0.1, the baseline the whole-turn and load benchmarks of
// internal/daemon start in a process of its own beside `ahpd serve`. It
// prints `listening ws://HOST:PORT`, as ahpd serve does, and stops when its
// stdin closes or on SIGTERM or SIGINT.
//
//	durableraw -recording turn.json -db turns.db   # the durable raw server
//	durableraw -recording turn.json                # the bare server: nothing stored
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/ahpd/ahpd/internal/perf/durableraw"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "durableraw:", err)
		os.Exit(1)
	}
}

func run() error {
	recording := flag.String("recording", "", "the recorded turn (JSON, durableraw.Recording) every turn replays")
	db := flag.String("db", "", "the SQLite file turns are stored in; empty: the bare server, which stores nothing")
	flag.Parse()
	data, err := os.ReadFile(*recording)
	if err != nil {
		return fmt.Errorf("read the recording: %w", err)
	}
	var rec durableraw.Recording
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Errorf("read the recording %s: %w", *recording, err)
	}
	s, err := durableraw.New(durableraw.Options{DB: *db, Recording: rec, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: s}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Printf("listening ws://%s\n", ln.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-stop:
	case <-stdinClosed:
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	_ = hs.Close()
	return s.Close()
}
