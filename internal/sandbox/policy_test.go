package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// tree is a fake file tree for Plan's Lister: each directory's entries.
type tree map[string][]string

func (t tree) list(dir string) ([]string, error) {
	names, ok := t[dir]
	if !ok {
		return nil, fmt.Errorf("no such directory %s", dir)
	}
	return names, nil
}

var testSystem = Paths{ReadWrite: []string{"/dev"}, ReadOnly: []string{"/usr", "/etc"}}

var home = tree{
	"/home/u":              {".ssh", ".local", ".claude", "notes.txt"},
	"/home/u/.local":       {"bin", "share"},
	"/home/u/.local/share": {"ahpd", "fonts"},
	"/etc":                 {"passwd", "ahpd"},
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name      string
		in        Inputs
		wantRW    []string
		wantRO    []string
		wantError string
	}{{
		name: "off grants nothing and needs nothing",
		in:   Inputs{Mode: Off},
	}, {
		name: "workspace writes the folders, the temp dir and the backend's state; reads the system and home",
		in: Inputs{Mode: Workspace, Folders: []string{"/work/repo"}, TempDir: "/data/tmp/s1",
			Backend: Paths{ReadWrite: []string{"/home/u/.claude"}, ReadOnly: []string{"/opt/agents"}},
			Home:    "/home/u", Secrets: []string{"/data"}},
		wantRW: []string{"/data/tmp/s1", "/dev", "/home/u/.claude", "/work/repo"},
		wantRO: []string{"/etc", "/home/u", "/opt/agents", "/usr"},
	}, {
		name: "a private temp dir under the data dir is granted alone",
		in: Inputs{Mode: Workspace, Folders: []string{"/work/repo"}, TempDir: "/data/tmp/s1",
			Home: "/home/u", Secrets: []string{"/data/ahpd.db", "/data/tokens"}},
		wantRW: []string{"/data/tmp/s1", "/dev", "/work/repo"},
		wantRO: []string{"/etc", "/home/u", "/usr"},
	}, {
		name: "workspace reads home by its entries, around the data dir under ~/.local/share",
		in: Inputs{Mode: Workspace, Folders: []string{"/work/repo"}, TempDir: "/var/ahpd-tmp/s1",
			Home: "/home/u", Secrets: []string{"/home/u/.local/share/ahpd"}},
		wantRW: []string{"/dev", "/var/ahpd-tmp/s1", "/work/repo"},
		wantRO: []string{"/etc", "/home/u/.claude", "/home/u/.local/bin", "/home/u/.local/share/fonts", "/home/u/.ssh", "/home/u/notes.txt", "/usr"},
	}, {
		name: "strict reads nothing of home but the backend's paths",
		in: Inputs{Mode: Strict, Folders: []string{"/work/repo"}, TempDir: "/t/s1",
			Backend: Paths{ReadWrite: []string{"/home/u/.claude"}},
			Home:    "/home/u", Secrets: []string{"/home/u/.local/share/ahpd"}},
		wantRW: []string{"/dev", "/home/u/.claude", "/t/s1", "/work/repo"},
		wantRO: []string{"/etc", "/usr"},
	}, {
		name: "a config file in /etc splits /etc",
		in: Inputs{Mode: Strict, Folders: []string{"/work/repo"}, TempDir: "/t/s1",
			Secrets: []string{"/etc/ahpd"}},
		wantRW: []string{"/dev", "/t/s1", "/work/repo"},
		wantRO: []string{"/etc/passwd", "/usr"},
	}, {
		name: "a working directory that holds the data dir is refused",
		in: Inputs{Mode: Workspace, Folders: []string{"/home/u"}, TempDir: "/t/s1",
			Home: "/home/u", Secrets: []string{"/home/u/.local/share/ahpd"}},
		wantError: "working directory /home/u holds /home/u/.local/share/ahpd",
	}, {
		name: "a working directory that is the data dir is refused",
		in: Inputs{Mode: Strict, Folders: []string{"/data"}, TempDir: "/t/s1",
			Secrets: []string{"/data"}},
		wantError: "working directory /data holds /data",
	}, {
		name: "a working directory inside the data dir (a session worktree) is granted",
		in: Inputs{Mode: Strict, Folders: []string{"/data/worktrees/s1"}, TempDir: "/data/tmp/s1",
			Secrets: []string{"/data/ahpd.db", "/data/token"}},
		wantRW: []string{"/data/tmp/s1", "/data/worktrees/s1", "/dev"},
		wantRO: []string{"/etc", "/usr"},
	}, {
		name: "a backend path that holds a token file is refused",
		in: Inputs{Mode: Workspace, Folders: []string{"/work/repo"}, TempDir: "/t/s1",
			Backend: Paths{ReadOnly: []string{"/home/u"}}, Secrets: []string{"/home/u/token"}},
		wantError: "backend path /home/u holds /home/u/token",
	}, {
		name:      "a relative folder is refused",
		in:        Inputs{Mode: Workspace, Folders: []string{"repo"}, TempDir: "/t/s1"},
		wantError: "not absolute",
	}, {
		name:      "a confining mode needs a temp dir",
		in:        Inputs{Mode: Strict, Folders: []string{"/work/repo"}},
		wantError: "no temp dir",
	}, {
		name: "a home that cannot be listed around a secret is an error, not a wider grant",
		in: Inputs{Mode: Workspace, Folders: []string{"/work/repo"}, TempDir: "/t/s1",
			Home: "/home/v", Secrets: []string{"/home/v/.local/share/ahpd"}},
		wantError: "list /home/v",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.System = testSystem
			p, err := Plan(tc.in, home.list)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("Plan error = %v, want one saying %q (policy %+v)", err, tc.wantError, p)
				}
				return
			}
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if !slices.Equal(p.ReadWrite, tc.wantRW) {
				t.Errorf("read-write = %q, want %q", p.ReadWrite, tc.wantRW)
			}
			if !slices.Equal(p.ReadOnly, tc.wantRO) {
				t.Errorf("read-only = %q, want %q", p.ReadOnly, tc.wantRO)
			}
			for _, s := range tc.in.Secrets {
				for _, g := range append(slices.Clone(p.ReadOnly), p.ReadWrite...) {
					if Holds(g, s) {
						t.Errorf("grant %s exposes the secret %s", g, s)
					}
				}
			}
		})
	}
}

func TestConflictErrorIsTyped(t *testing.T) {
	_, err := Plan(Inputs{Mode: Workspace, Folders: []string{"/d"}, TempDir: "/t", Secrets: []string{"/d/ahpd.db"}, System: testSystem}, home.list)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Path != "/d" || ce.Secret != "/d/ahpd.db" {
		t.Fatalf("err = %v, want a ConflictError for /d holding /d/ahpd.db", err)
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		bad  bool
	}{{"", Off, false}, {"off", Off, false}, {"workspace", Workspace, false}, {"strict", Strict, false}, {"lax", "", true}} {
		got, err := ParseMode(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestAvailability(t *testing.T) {
	for _, tc := range []struct {
		mode    Mode
		abi     int
		missing string
		ok      bool
		reason  string
	}{
		{Off, 0, "", true, ""},
		{Workspace, 7, "", true, ""},
		{Strict, 3, "", true, ""},
		{Workspace, 2, "", false, "ABI 2 is older than 3"},
		{Strict, 0, "", false, "not available on this kernel"},
		{Workspace, 0, "switched off by a test", false, "not available: switched off by a test"},
	} {
		ok, reason := Availability(tc.mode, tc.abi, tc.missing)
		if ok != tc.ok || !strings.Contains(reason, tc.reason) || (tc.reason == "" && reason != "") {
			t.Errorf("Availability(%s, %d) = %v %q; want %v %q", tc.mode, tc.abi, ok, reason, tc.ok, tc.reason)
		}
	}
}

func TestParseNetwork(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Network
		bad  bool
	}{{"", NetworkOpen, false}, {"open", NetworkOpen, false}, {"models", NetworkModels, false}, {"none", "", true}} {
		got, err := ParseNetwork(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseNetwork(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// TestNetworkAvailability: models needs ABI 4 and is refused, with the
// reason, below it; open runs on any ABI a mode runs on.
func TestNetworkAvailability(t *testing.T) {
	for _, tc := range []struct {
		n      Network
		abi    int
		ok     bool
		reason string
	}{
		{NetworkOpen, 3, true, ""},
		{NetworkModels, 4, true, ""},
		{NetworkModels, 7, true, ""},
		{NetworkModels, 3, false, "needs Landlock ABI 4"},
	} {
		ok, reason := NetworkAvailability(tc.n, tc.abi)
		if ok != tc.ok || !strings.Contains(reason, tc.reason) || (tc.reason == "" && reason != "") {
			t.Errorf("NetworkAvailability(%q, %d) = %v %q", tc.n, tc.abi, ok, reason)
		}
	}
}
