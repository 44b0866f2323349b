package localendpoint

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	if Alive(c.Process.Pid) {
		t.Skipf("pid %d was reused at once", c.Process.Pid)
	}
	return c.Process.Pid
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// Publish writes the entry whole under its canonical name, 0600 in 0700
// directories, and leaves no temporary behind.
func TestPublishWritesOwnerOnlyEntry(t *testing.T) {
	ud := t.TempDir()
	e := NewStandalone(os.Getpid(), 9187, "1.0.0", "secret")
	p, err := Publish(ud, e)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(ud, "agent-host", "local-endpoint", "entries", e.FileName()); p != want {
		t.Fatalf("published at %s, want %s", p, want)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := Parse(data)
	if !ok || got != e {
		t.Fatalf("read back %+v (ok %v), want %+v", got, ok, e)
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("entry mode %o, want 600", m)
	}
	for _, d := range []string{filepath.Join(ud, "agent-host", "local-endpoint"), EntriesDir(ud)} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("%s mode %o, want 700", d, m)
		}
	}
	if n := names(t, EntriesDir(ud)); !slices.Equal(n, []string{e.FileName()}) {
		t.Errorf("entries dir holds %v, want only the entry", n)
	}
	// Publishing again replaces it in place (one owner per file).
	if _, err := Publish(ud, e); err != nil {
		t.Fatal(err)
	}
	if n := names(t, EntriesDir(ud)); len(n) != 1 {
		t.Errorf("after a second publish the dir holds %v", n)
	}
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := Remove(p); err != nil {
		t.Errorf("removing a gone entry: %v", err)
	}
	if _, err := os.Stat(EntriesDir(ud)); err != nil {
		t.Errorf("the entries dir must stay for other writers: %v", err)
	}
}

// An existing entries directory opened wide is narrowed to the owner.
func TestPublishNarrowsRegistryDirs(t *testing.T) {
	ud := t.TempDir()
	if err := os.MkdirAll(EntriesDir(ud), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(EntriesDir(ud), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(ud, NewStandalone(os.Getpid(), 1, "1.0.0", "")); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, EntriesDir(ud)); m != 0o700 {
		t.Errorf("entries dir mode %o, want 700", m)
	}
}

// A link anywhere below the user-data directory is refused, and nothing is
// written where it points.
func TestPublishRefusesLinkedRegistryDirs(t *testing.T) {
	for _, linked := range []string{"agent-host", "agent-host/local-endpoint", "agent-host/local-endpoint/entries"} {
		t.Run(linked, func(t *testing.T) {
			ud, outside := t.TempDir(), t.TempDir()
			link := filepath.Join(ud, linked)
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			_, err := Publish(ud, NewStandalone(os.Getpid(), 1, "1.0.0", "secret"))
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Publish through a linked %s: %v, want ErrRefused", linked, err)
			}
			if n := names(t, outside); len(n) != 0 {
				t.Errorf("wrote %v outside the user-data dir", n)
			}
			if _, err := Prune(ud, func(int) bool { return false }); !errors.Is(err, ErrRefused) {
				t.Errorf("Prune through a linked %s: %v, want ErrRefused", linked, err)
			}
		})
	}
}

// A registry directory that is a file, a relative user-data path and a
// user-data path that is a file are refused.
func TestPublishRefusesWhatIsNoDirectory(t *testing.T) {
	ud := t.TempDir()
	if err := os.WriteFile(filepath.Join(ud, "agent-host"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(ud, NewStandalone(1, 1, "1.0.0", "")); !errors.Is(err, ErrRefused) {
		t.Errorf("agent-host a file: %v, want ErrRefused", err)
	}
	if _, err := Publish("relative/dir", NewStandalone(1, 1, "1.0.0", "")); !errors.Is(err, ErrRefused) {
		t.Errorf("relative user data: %v, want ErrRefused", err)
	}
	if _, err := Publish(filepath.Join(ud, "agent-host"), NewStandalone(1, 1, "1.0.0", "")); !errors.Is(err, ErrRefused) {
		t.Errorf("user data a file: %v, want ErrRefused", err)
	}
	if _, err := Publish(filepath.Join(ud, "missing"), NewStandalone(1, 1, "1.0.0", "")); err == nil {
		t.Error("a missing user-data dir was accepted")
	}
}

// The user-data directory itself may be a link (users move their data);
// the entry lands in the real directory.
func TestPublishFollowsALinkedUserDataDir(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "Code")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := NewStandalone(os.Getpid(), 1, "1.0.0", "")
	p, err := Publish(link, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(EntriesDir(real), e.FileName())); err != nil {
		t.Errorf("entry not in the real dir (published at %s): %v", p, err)
	}
}

// Prune removes a dead standalone entry and leaves everything else: a live
// standalone entry, editor entries dead or alive, a misnamed copy, a link,
// malformed and temporary files.
func TestPruneRemovesOnlyDeadStandaloneEntries(t *testing.T) {
	ud := t.TempDir()
	dead := deadPID(t)
	stale := NewStandalone(dead, 4000, "1.0.0", "old")
	live := NewStandalone(os.Getpid(), 4001, "1.0.0", "new")
	liveEditor := Entry{SchemaVersion: 2, Type: TypeEditor, PID: os.Getpid(), InstanceID: "ed", ProtocolVersion: "0.8.0", ConnectionToken: "t", Endpoint: Endpoint{Type: EndpointSocket, Path: "/tmp/ed.sock"}}
	deadEditor := liveEditor
	deadEditor.PID, deadEditor.InstanceID = dead, "ed2"
	var stalePath string
	for _, e := range []Entry{stale, live, liveEditor, deadEditor} {
		p, err := Publish(ud, e)
		if err != nil {
			t.Fatal(err)
		}
		if e == stale {
			stalePath = p
		}
	}
	dir := EntriesDir(ud)
	staleData, _ := os.ReadFile(stalePath)
	misnamed := NewStandalone(dead, 4002, "1.0.0", "")
	mustWrite(t, filepath.Join(dir, "copy.json"), staleData)
	mustWrite(t, filepath.Join(dir, "malformed.json"), []byte("{ not json"))
	mustWrite(t, filepath.Join(dir, "abc.tmp"), staleData)
	other := filepath.Join(t.TempDir(), "target.json")
	mustWrite(t, other, staleData)
	if err := os.Symlink(other, filepath.Join(dir, misnamed.FileName())); err != nil {
		t.Fatal(err)
	}

	removed, err := Prune(ud, Alive)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{stalePath}) {
		t.Errorf("pruned %v, want only %s", removed, stalePath)
	}
	want := []string{"abc.tmp", "copy.json", "malformed.json", misnamed.FileName(), live.FileName(), liveEditor.FileName(), deadEditor.FileName()}
	slices.Sort(want)
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("left %v\nwant %v", got, want)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("the link's target was touched: %v", err)
	}
}

// A user-data dir without a registry prunes nothing and makes nothing.
func TestPruneOfNoRegistry(t *testing.T) {
	ud := t.TempDir()
	removed, err := Prune(ud, func(int) bool { return false })
	if err != nil || len(removed) != 0 {
		t.Fatalf("Prune = %v, %v", removed, err)
	}
	if n := names(t, ud); len(n) != 0 {
		t.Errorf("Prune made %v", n)
	}
	if removed, err := Prune(filepath.Join(ud, "missing"), func(int) bool { return false }); err != nil || len(removed) != 0 {
		t.Errorf("Prune of a missing dir = %v, %v", removed, err)
	}
}

// Alive tells this process from a reaped one.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if Alive(deadPID(t)) {
		t.Error("a reaped process is alive")
	}
	if Alive(0) || Alive(-1) {
		t.Error("pid 0 or -1 is alive")
	}
}

func mustWrite(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
