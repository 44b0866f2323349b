package hostcmd

import (
	"context"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

func TestConversationAnswers(t *testing.T) {
	c := New()
	defer c.Close()
	if err := c.Send(context.Background(), agent.Turn{ID: "t1", Text: "/rename Done"}); err != nil {
		t.Fatal(err)
	}
	if ev := <-c.Events(); ev.Kind != agent.EventText || ev.Text != "Renamed: Done" || ev.TurnID != "t1" {
		t.Fatalf("first event %+v", ev)
	}
	if ev := <-c.Events(); ev.Kind != agent.EventTurnEnd || ev.End.Outcome != agent.OutcomeComplete {
		t.Fatalf("second event %+v", ev)
	}
	// An empty rename says nothing and completes.
	if err := c.Send(context.Background(), agent.Turn{ID: "t2", Text: "/rename"}); err != nil {
		t.Fatal(err)
	}
	if ev := <-c.Events(); ev.Kind != agent.EventTurnEnd {
		t.Fatalf("empty rename event %+v", ev)
	}
	if err := c.Send(context.Background(), agent.Turn{ID: "t3", Text: "hello"}); err == nil {
		t.Fatal("a plain message was taken as a command")
	}
}
