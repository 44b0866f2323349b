package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahpd/ahpd/internal/sandbox"
)

// TestSandboxExecVerbConfines: the built binary's hidden sandbox-exec
// verb confines itself by the policy it is handed, then execs the
// command; with no policy it runs nothing.
func TestSandboxExecVerbConfines(t *testing.T) {
	if ok, why := sandbox.NewSite(sandbox.Site{}).Available(sandbox.Workspace); !ok {
		t.Skipf("no sandbox here: %s", why)
	}
	root := t.TempDir()
	work, tmp := filepath.Join(root, "work"), filepath.Join(root, "tmp")
	for _, d := range []string{work, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := sandbox.Policy{Mode: sandbox.Workspace, ReadWrite: []string{work, tmp, "/dev"}, ReadOnly: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}, TempDir: tmp}
	raw, _ := json.Marshal(p)
	run := func(policy, script string) (string, error) {
		cmd := exec.Command(binary, sandbox.Subcommand, "/bin/sh", "--", "sh", "-c", script)
		cmd.Dir = work
		cmd.Env = append(cleanEnv(t), sandbox.PolicyEnv+"="+policy)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(string(raw), `echo in > inside.txt && echo "$TMPDIR"`); err != nil || strings.TrimSpace(out) != tmp {
		t.Fatalf("inside: %v %q", err, out)
	}
	out, err := run(string(raw), "echo out > "+filepath.Join(root, "escape.txt"))
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("outside: %v %q, want Permission denied", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "escape.txt")); !os.IsNotExist(err) {
		t.Fatal("the refused write left a file")
	}
	if out, err := run("", "touch "+filepath.Join(work, "ran")); err == nil || !strings.Contains(out, "did not run") {
		t.Fatalf("no policy: %v %q, want a refusal", err, out)
	}
	if _, err := os.Stat(filepath.Join(work, "ran")); !os.IsNotExist(err) {
		t.Fatal("the launcher ran a command without a policy")
	}
}

// TestDoctorReportsTheSandbox: doctor names Landlock's ABI and the modes
// that run; a sandbox.default that cannot run here is a problem.
func TestDoctorReportsTheSandbox(t *testing.T) {
	cfg := writeConfig(t, `{"agents":{"claude":{"binary":"/nonexistent/claude"}},"sandbox":{"default":"workspace"}}`)
	out, _, _ := ahpdRun(t, nil, "doctor", "--config", cfg, "--data-dir", t.TempDir(), "--port", "0")
	if ok, _ := sandbox.NewSite(sandbox.Site{}).Available(sandbox.Workspace); ok {
		if !strings.Contains(out, "ok   sandbox        Landlock ABI") || !strings.Contains(out, "off, workspace, strict; default workspace") {
			t.Errorf("doctor on a Landlock kernel:\n%s", out)
		}
	}
	out, _, code := ahpdRun(t, []string{sandbox.UnavailableEnv + "=switched off by the test"}, "doctor", "--config", cfg, "--data-dir", t.TempDir(), "--port", "0")
	if code != 1 || !strings.Contains(out, "FAIL sandbox") || !strings.Contains(out, "switched off by the test") || !strings.Contains(out, "set sandbox.default to off") {
		t.Fatalf("doctor with sandbox.default workspace and no Landlock: exit %d\n%s", code, out)
	}
}
