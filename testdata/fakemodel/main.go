// Command fakemodel is a scripted model server for ahpd's backend tests. It
// speaks enough of the Anthropic Messages API (streamed over SSE), of the
// OpenAI Chat Completions and Responses APIs and of the Gemini API
// (generateContent, streamGenerateContent) for the real agent CLIs (claude,
// pi, Codex, Gemini CLI, Copilot CLI) to run against it with no network but
// loopback.
//
// Usage:
//
//	fakemodel [-addr 127.0.0.1:0] [-log requests.jsonl]
//
// It prints "LISTENING 127.0.0.1:PORT" on stdout once it accepts requests and
// refuses (exit 2) any address that is not loopback.
//
// What it answers is chosen by markers in the text of the last message
// whose role is not "system" (see script.go): plain text, [slow], [wait:PATH]
// (the [slow] reply's first delta, then the rest once PATH exists), [tool],
// [bash:CMD], [[call NAME ARGS]] (a script of tool calls, one per model
// step, with raw JSON arguments), [task:PROMPT] (a call of the CLI's subagent tool, Task or
// Agent, whose subagent answers PROMPT), [error], [overloaded], [think],
// [drop] (half the text reply, then the connection is cut);
// and "tool done" once a tool
// result comes back. The answers are deterministic. [tool] and [bash:CMD]
// call the shell tool the request offers (Bash, bash, exec_command,
// run_shell_command, ...) with the arguments that tool takes. Each API
// answers in its own shape: Responses as response.* events with
// output_text deltas, function_call items and reasoning summaries; Gemini
// as text, thought and functionCall parts (a call's ARGS that are not a
// JSON object are sent as {}).
//
// It lives under testdata so `go test ./...` leaves it alone; its tests are
// in internal/testutil/fakemodel, which builds and starts it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	logPath := flag.String("log", "", "append one JSON line per request to this file")
	flag.Parse()

	if err := checkLoopback(*addr); err != nil {
		fmt.Fprintf(os.Stderr, "fakemodel: %v\n", err)
		os.Exit(2)
	}

	var rl *requestLog
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fakemodel: open log: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		rl = &requestLog{w: f}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakemodel: listen: %v\n", err)
		os.Exit(1)
	}
	srv := &http.Server{
		Handler:           newServer(rl),
		ReadHeaderTimeout: 10 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()

	fmt.Printf("LISTENING %s\n", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "fakemodel: serve: %v\n", err)
		os.Exit(1)
	}
}

// checkLoopback refuses every address that is not an explicit loopback IP
// (or "localhost"): an empty host would bind every interface.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad -addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to listen on %q: only loopback addresses are allowed", addr)
	}
	return nil
}
