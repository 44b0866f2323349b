package agentproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocateConfiguredThenPath: a configured CLI wins over PATH, a missing
// one says the hint and why, and with none configured the name is looked
// up on PATH only (never in testdata/agents above the working directory).
func TestLocateConfiguredThenPath(t *testing.T) {
	pathDir, other := t.TempDir(), t.TempDir()
	onPath := writeExecutable(t, pathDir, "cli")
	configured := writeExecutable(t, other, "cli")
	t.Setenv("PATH", pathDir)
	// An install where the old lookup walked to, which must not be found.
	work := t.TempDir()
	writeExecutable(t, filepath.Join(work, "testdata", "agents", "node_modules", ".bin"), "only-in-testdata")
	t.Chdir(work)

	tests := []struct {
		name             string
		configured, bare string
		want, wantErr    string
	}{
		{"the configured path wins", configured, "cli", configured, ""},
		{"a configured name is looked up on PATH", "cli", "other", onPath, ""},
		{"with none configured, the name on PATH", "", "cli", onPath, ""},
		{"a missing configured path says the hint and why", filepath.Join(other, "nope"), "cli", "", "install it: "},
		{"a name not on PATH says the hint", "", "absent", "", "install it"},
		{"testdata/agents is not looked in", "", "only-in-testdata", "", "install it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locate(tt.configured, tt.bare, "install it")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func writeExecutable(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
