package agentproc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestInstallPathsReadTheWholeNodeModulesTree(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "agents", "node_modules", "@scope", "cli", "bin")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "cli.js"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "agents", "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../@scope/cli/bin/cli.js", filepath.Join(bin, "cli")); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(root, "agents", "node_modules"))
	for _, tc := range []struct {
		name, bin string
		want      []string
	}{
		{"an npm link grants its node_modules", filepath.Join(bin, "cli"), []string{bin, real}},
		{"a file inside node_modules grants its directory and the tree", filepath.Join(pkg, "cli.js"), []string{pkg, real}},
		{"no binary grants nothing", "", nil},
	} {
		got := InstallPaths(tc.bin)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: InstallPaths(%s) = %q, want %q", tc.name, tc.bin, got, tc.want)
		}
	}
}
