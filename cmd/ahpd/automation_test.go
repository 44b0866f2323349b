package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/ahp"
)

// `ahpd automation` takes an operator from nothing to a prompt that runs
// every morning: create is refused until enable opens the gates; then the
// automation is listed with its next run, runs by hand to completion in a
// session of its own, and is removed.
func TestAutomationVerbs(t *testing.T) {
	work := t.TempDir()
	p := serveBinary(t, t.TempDir(), work)
	env := []string{"AHPD_URL=" + p.url}
	create := []string{"automation", "create", "morning", "--cron", "0 7 * * 1-5", "--tz", "Europe/Berlin", "--provider", "script", "--dir", work, "good morning"}

	if _, errOut, code := ahpdRun(t, env, create...); code != 1 || !strings.Contains(errOut, "Automation migration must complete") {
		t.Fatalf("create before enable: exit %d: %s", code, errOut)
	}
	if out, errOut, code := ahpdRun(t, env, "automation", "enable"); code != 0 || !strings.Contains(out, "enabled") {
		t.Fatalf("enable: exit %d: %s%s", code, out, errOut)
	}
	if _, errOut, code := ahpdRun(t, env, "automation", "enable"); code != 0 {
		t.Fatalf("a second enable: exit %d: %s", code, errOut)
	}
	if out, errOut, code := ahpdRun(t, env, create...); code != 0 || !strings.Contains(out, "ahp-automation:/morning next run: 20") {
		t.Fatalf("create: exit %d: %s%s", code, out, errOut)
	}
	if _, errOut, code := ahpdRun(t, env, "automation", "create", "Bad Name", "x"); code != 2 {
		t.Fatalf("create with a bad name: exit %d: %s", code, errOut)
	}
	if _, errOut, code := ahpdRun(t, env, "automation", "create", "x", "--cron", "@daily", "x"); code != 2 || !strings.Contains(errOut, "five fields") {
		t.Fatalf("create with a bad schedule: exit %d: %s", code, errOut)
	}
	out, errOut, code := ahpdRun(t, env, "automation", "list", "--json")
	var list []ahp.AutomationEntry
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || !list[0].Definition.Enabled ||
		list[0].Definition.Message.Text != "good morning" || list[0].NextRunAt == "" || len(list[0].Definition.Triggers) != 1 {
		t.Fatalf("list: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code = ahpdRun(t, env, "automation", "run", "morning", "--wait")
	if code != 0 || !strings.Contains(out, " completed session ahp-session:/") {
		t.Fatalf("run --wait: exit %d: %s%s", code, out, errOut)
	}
	if out, errOut, code := ahpdRun(t, env, "automation", "remove", "morning"); code != 0 {
		t.Fatalf("remove: exit %d: %s%s", code, out, errOut)
	}
	out, _, _ = ahpdRun(t, env, "automation", "list", "--json")
	if strings.TrimSpace(out) != "[]" {
		t.Fatalf("list after remove: %s", out)
	}
}
