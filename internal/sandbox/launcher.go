package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

const (
	// Subcommand is the hidden verb a sandboxed process starts as:
	// `<ahpd> sandbox-exec <path> -- <argv...>`, with the policy in
	// PolicyEnv. ahpd's main and the TestMain of packages whose tests
	// start sandboxed processes hand it to RunIfLauncher first.
	Subcommand = "sandbox-exec"
	// PolicyEnv carries the Policy as JSON to the launcher, which removes
	// it before the exec.
	PolicyEnv = "AHPD_SANDBOX_POLICY"
	// launchFailed is the launcher's exit status when it could not
	// confine itself: the command never ran.
	launchFailed = 126
	// maxPolicyBytes bounds the policy's JSON: the kernel refuses an
	// environment string over 128 KiB (MAX_ARG_STRLEN), so a larger one
	// (a $HOME split into thousands of entries) is an error here, said
	// clearly, rather than an exec failing with E2BIG.
	maxPolicyBytes = 120 << 10
)

// Wrap makes cmd start through the launcher exe (ahpd itself, or the
// test binary) confined by p. Call it after exec.Command and before
// Start; a policy that confines nothing leaves cmd alone. cmd keeps its
// directory, stdio and process attributes; its environment is made
// explicit (the daemon's when it had none) and carries the policy.
func Wrap(exe string, p Policy, cmd *exec.Cmd) error {
	if !p.Mode.Confines() {
		return nil
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	if exe == "" {
		return errors.New("sandbox: no launcher executable")
	}
	if cmd.Process != nil {
		return errors.New("sandbox: the command already started")
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("sandbox: encode the policy: %w", err)
	}
	if len(raw) > maxPolicyBytes {
		return fmt.Errorf("sandbox: the policy is %d bytes (%d paths), over the %d the launcher takes: a folder on the way to the data dir has too many entries", len(raw), len(p.ReadWrite)+len(p.ReadOnly), maxPolicyBytes)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = withoutKey(env, PolicyEnv)
	cmd.Env = append(env, PolicyEnv+"="+string(raw))
	argv := append([]string{exe, Subcommand, cmd.Path, "--"}, cmd.Args...)
	cmd.Path, cmd.Args = exe, argv
	return nil
}

// RunIfLauncher runs the launcher and never returns when the process was
// started as one (os.Args[1] is Subcommand); otherwise it returns at
// once. Call it first thing in main and in TestMain.
func RunIfLauncher() {
	if len(os.Args) < 2 || os.Args[1] != Subcommand {
		return
	}
	err := launch(os.Args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "ahpd %s: %v; the command did not run\n", Subcommand, err)
	os.Exit(launchFailed)
}

// launch reads the launcher's arguments and policy, confines the
// process and execs the command; it returns only on failure.
func launch(args, env []string) error {
	if len(args) < 3 || args[1] != "--" {
		return fmt.Errorf("usage: %s <path> -- <argv...>", Subcommand)
	}
	path, argv := args[0], args[2:]
	var raw string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, PolicyEnv+"="); ok {
			raw = v
		}
	}
	if raw == "" {
		return fmt.Errorf("no policy in %s", PolicyEnv)
	}
	var p Policy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return fmt.Errorf("read the policy: %w", err)
	}
	if !p.Mode.Confines() {
		return fmt.Errorf("policy mode %q confines nothing", p.Mode)
	}
	env = withoutKey(env, PolicyEnv)
	if p.TempDir != "" {
		env = append(withoutKey(withoutKey(withoutKey(env, "TMPDIR"), "TMP"), "TEMP"), "TMPDIR="+p.TempDir)
	}
	return restrictAndExec(p, path, argv, env)
}

// withoutKey drops key's entries from env.
func withoutKey(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
