package acp

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSandboxPathsOfStateDirs: a sandboxed ACP agent may write the state
// folders its entry's env names (made if missing) and the one a known
// agent keeps under HOME; the daemon's own XDG folders are not given.
func TestSandboxPathsOfStateDirs(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"gemini", "codex-acp", "copilot", "other"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", "/daemon/own/.config")
	home := t.TempDir()
	for _, tc := range []struct {
		command string
		env     []string
		want    []string
		not     []string
	}{
		{"gemini", []string{"HOME=" + home}, []string{filepath.Join(home, ".gemini")}, []string{"/daemon/own/.config"}},
		{"gemini", []string{"HOME=" + home, "GEMINI_CLI_HOME=" + filepath.Join(home, "g")}, []string{filepath.Join(home, "g", ".gemini")}, nil},
		{"codex-acp", []string{"HOME=" + home}, []string{filepath.Join(home, ".codex")}, nil},
		{"codex-acp", []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, "cx")}, []string{filepath.Join(home, "cx")}, []string{filepath.Join(home, ".codex")}},
		{"copilot", []string{"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}, []string{filepath.Join(home, ".copilot"), filepath.Join(home, "cache")}, nil},
		{"other", []string{"HOME=" + home, "XDG_STATE_HOME=relative"}, []string{filepath.Join(home, ".npm")}, []string{"relative", filepath.Join(home, ".gemini")}},
	} {
		a, err := New(Options{Name: "x", Command: filepath.Join(bin, tc.command), Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		write, _ := a.sandboxPaths()
		for _, w := range tc.want {
			if !slices.Contains(write, w) {
				t.Errorf("%s %v: write %v lacks %s", tc.command, tc.env, write, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(write, n) {
				t.Errorf("%s %v: write %v holds %s", tc.command, tc.env, write, n)
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(home, "cache")); err != nil || !fi.IsDir() {
		t.Errorf("a state folder the env names was not made: %v", err)
	}
}
