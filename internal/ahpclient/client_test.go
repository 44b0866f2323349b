package ahpclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahpclient"
	"github.com/ahpd/ahpd/internal/daemon"
)

// startDaemon runs a real daemon on port 0 with the script agent.
func startDaemon(t *testing.T, token string) *daemon.Daemon {
	t.Helper()
	reg, err := agent.NewRegistry(script.New(script.Options{SlowDelay: 20 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	cfg := daemon.Defaults()
	cfg.Port, cfg.DataDir, cfg.Paths, cfg.ConnectionToken = 0, t.TempDir(), []string{t.TempDir()}, token
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Agents: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	return d
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// A script's whole conversation: create a session, send, stream the
// answer, list, and a turn that fails.
func TestSendStreamsTheAnswer(t *testing.T) {
	d := startDaemon(t, "tok")
	if _, err := ahpclient.Dial(ctx(t), d.URL(), "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v, want HTTP 401", err)
	}
	c, err := ahpclient.Dial(ctx(t), d.URL(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, chat, err := c.CreateSession(ctx(t), "script", nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var types []string
	res, err := c.Send(ctx(t), chat, "[slow] streamed in pieces", ahpclient.SendOptions{
		OnText:     func(s string) { text.WriteString(s) },
		OnEnvelope: func(e ahpclient.Envelope) { types = append(types, e.Type()) },
	})
	if err != nil || res.Ending != ahpclient.EndComplete {
		t.Fatalf("send: %+v %v", res, err)
	}
	if text.String() != "echo: [slow] streamed in pieces" {
		t.Fatalf("text %q", text.String())
	}
	deltas := 0
	for _, ty := range types {
		if ty == "chat/delta" {
			deltas++
		}
	}
	if types[0] != "chat/turnStarted" || deltas < 2 {
		t.Fatalf("envelopes %v: want the start and several deltas", types)
	}
	list, err := c.ListSessions(ctx(t))
	if err != nil || len(list) != 1 || list[0].Resource != sess || list[0].DefaultChat != chat {
		t.Fatalf("list %+v %v", list, err)
	}
	res, err = c.Send(ctx(t), chat, "[error] no", ahpclient.SendOptions{})
	if err != nil || res.Ending != ahpclient.EndError || res.Error == "" {
		t.Fatalf("failing turn: %+v %v", res, err)
	}
	if _, err := c.Send(ctx(t), chat, "x", ahpclient.SendOptions{Mode: ahpclient.ModeSteer}); err == nil {
		t.Fatal("steering with no turn running was accepted")
	}
}

// Closing Cancel stops the turn (chat/turnCancelled) and Send reports it.
func TestCancelStopsTheTurn(t *testing.T) {
	d := startDaemon(t, "")
	c, err := ahpclient.Dial(ctx(t), d.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, chat, err := c.CreateSession(ctx(t), "script", nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel := make(chan struct{})
	res, err := c.Send(ctx(t), chat, "[hold] until stopped", ahpclient.SendOptions{
		Cancel: cancel,
		OnText: func(string) {
			select {
			case <-cancel:
			default:
				close(cancel)
			}
		},
	})
	if err != nil || res.Ending != ahpclient.EndCancelled {
		t.Fatalf("cancelled send: %+v %v", res, err)
	}
	// A refused message is an error naming the refusal.
	_, err = c.Send(ctx(t), "ahp-chat:/no-such-chat", "x", ahpclient.SendOptions{})
	if err == nil {
		t.Fatal("send to an unknown chat succeeded")
	}
	var rpcErr *ahpclient.Error
	if !errors.As(err, &rpcErr) {
		t.Logf("unknown chat: %v", err)
	}
}
