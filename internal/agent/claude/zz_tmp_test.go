package claude

import (
	"os"
	"testing"

	"github.com/ahpd/ahpd/internal/agent"
)

func TestZZDump(t *testing.T) {
	h := newHarness(t, "")
	d := h.openNew()
	d.send("t2", "again [bash:touch denied.txt]")
	ask := d.until("confirmation", func(ev agent.Event) bool {
		return ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation && ev.TurnID == "t2"
	})
	if err := d.conv.Confirm("t2", ask.ToolCall.ID, false); err != nil {
		t.Fatal(err)
	}
	d.end("t2")
	d.send("t3", "slow [slow]")
	d.until("first delta", func(ev agent.Event) bool { return ev.Kind == agent.EventText && ev.TurnID == "t3" })
	d.conv.Stop(t.Context())
	d.end("t3")
	d.send("t4", "perm then stop [bash:touch x.txt]")
	d.until("confirmation", func(ev agent.Event) bool {
		return ev.Kind == agent.EventToolReady && ev.ToolCall.NeedsConfirmation && ev.TurnID == "t4"
	})
	d.conv.Stop(t.Context())
	d.end("t4")
	d.complete("t5", "fine")
	d.close()
	b, _ := os.ReadFile(transcriptPath(h.cfg, d.id, h.cwd))
	os.WriteFile("/tmp/zzdump.jsonl", b, 0o644)
	t.Log(d.dump())
}
