package daemon_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
	"github.com/ahpd/ahpd/internal/agent/script"
	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/localendpoint"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
)

// startLocal starts a daemon for the local endpoint tests: the config as
// mutate leaves it, and opts.VSCodeUserData as ahpd serve would pass the
// folders it found.
func startLocal(t *testing.T, opts daemon.Options, mutate func(*daemon.Config)) *daemon.Daemon {
	t.Helper()
	cfg := daemon.Defaults()
	cfg.Port = 0
	cfg.DataDir = t.TempDir()
	cfg.Paths = []string{t.TempDir()}
	if mutate != nil {
		mutate(&cfg)
	}
	reg, err := agent.NewRegistry(script.New(script.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	opts.Agents = reg
	opts.Logger = slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := daemon.Start(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	t.Cleanup(func() {
		if wasClosed(d) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	return d
}

// closedDaemons are the daemons a test closed itself (Close is called once).
// The local endpoint tests run in parallel, so the set has a lock.
var closedDaemons struct {
	sync.Mutex
	set map[*daemon.Daemon]bool
}

func wasClosed(d *daemon.Daemon) bool {
	closedDaemons.Lock()
	defer closedDaemons.Unlock()
	return closedDaemons.set[d]
}

func closeDaemon(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	closedDaemons.Lock()
	if closedDaemons.set == nil {
		closedDaemons.set = map[*daemon.Daemon]bool{}
	}
	closedDaemons.set[d] = true
	closedDaemons.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("close daemon: %v", err)
	}
}

// entryFiles lists the registry files of user-data dir ud.
func entryFiles(t *testing.T, ud string) []string {
	t.Helper()
	des, err := os.ReadDir(localendpoint.EntriesDir(ud))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// readOwnEntry reads the one entry the daemon wrote in ud, checking what a
// VS Code reader checks: canonical name, schema, our pid, 0600.
func readOwnEntry(t *testing.T, d *daemon.Daemon, ud string) localendpoint.Entry {
	t.Helper()
	paths := d.LocalEndpoints()
	if len(paths) != 1 || filepath.Dir(paths[0]) != localendpoint.EntriesDir(ud) {
		t.Fatalf("daemon wrote %v, want one entry in %s", paths, localendpoint.EntriesDir(ud))
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	e, ok := localendpoint.Parse(data)
	if !ok {
		t.Fatalf("entry %s does not parse: %s", paths[0], data)
	}
	if filepath.Base(paths[0]) != e.FileName() {
		t.Errorf("entry stored as %s, canonical name %s", filepath.Base(paths[0]), e.FileName())
	}
	if e.Type != localendpoint.TypeStandalone || e.PID != os.Getpid() || e.ProtocolVersion != ahp.ProtocolVersion {
		t.Errorf("entry %+v: want standalone, pid %d, protocol %s", e, os.Getpid(), ahp.ProtocolVersion)
	}
	_, port, _ := net.SplitHostPort(d.Addr())
	if e.Endpoint != (localendpoint.Endpoint{Type: "tcp", Host: "127.0.0.1", Port: atoi(t, port)}) {
		t.Errorf("endpoint %+v, want tcp 127.0.0.1:%s", e.Endpoint, port)
	}
	fi, err := os.Stat(paths[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	return e
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// dialEntry connects the way a VS Code reader does: ws://host:port/ with
// the entry's token as ?tkn=, then initialize.
func dialEntry(t *testing.T, e localendpoint.Entry) *ahptest.Client {
	t.Helper()
	url := "ws://" + net.JoinHostPort(e.Endpoint.Host, strconv.Itoa(e.Endpoint.Port))
	c := ahptest.Dial(t, url, e.ConnectionToken)
	c.Initialize("vscode-local", ahp.RootURI)
	return c
}

// A daemon publishes its entry in the named user-data dir; a client that
// reads it connects and initializes; stopping removes the entry and keeps
// the shared entries dir.
func TestLocalEndpointPublishedConnectableAndRemoved(t *testing.T) {
	t.Parallel()
	ud := filepath.Join(t.TempDir(), "Code") // made: the config names it
	d := startLocal(t, daemon.Options{}, func(c *daemon.Config) { c.VSCodeUserData = []string{ud} })
	e := readOwnEntry(t, d, ud)
	if e.ConnectionToken != "" {
		t.Errorf("a daemon without tokens published token %q; its door needs none", e.ConnectionToken)
	}
	c := dialEntry(t, e)
	c.MustCall("createSession", map[string]any{"channel": "ahp-session:/99999999-0000-4000-8000-0000000000e1", "provider": "script"})

	closeDaemon(t, d)
	if files := entryFiles(t, ud); len(files) != 0 {
		t.Errorf("after stop the registry holds %v", files)
	}
	if _, err := os.Stat(localendpoint.EntriesDir(ud)); err != nil {
		t.Errorf("the entries dir must stay for other hosts: %v", err)
	}
}

// With a connection token the entry carries a token of its own, minted for
// the run, with root's grants; the deployment's token is not copied into
// VS Code's folder, a wrong token is refused, and a restart's entry has a
// new token while the old one stops working.
func TestLocalEndpointTokenIsPerRunAndRoot(t *testing.T) {
	t.Parallel()
	ud := t.TempDir()
	data := t.TempDir()
	start := func() *daemon.Daemon {
		return startLocal(t, daemon.Options{}, func(c *daemon.Config) {
			c.VSCodeUserData = []string{ud}
			c.ConnectionToken = "root-token"
			c.DataDir = data
		})
	}
	d := start()
	e := readOwnEntry(t, d, ud)
	if e.ConnectionToken == "" || e.ConnectionToken == "root-token" {
		t.Fatalf("entry token %q: want a token of its own", e.ConnectionToken)
	}
	c := dialEntry(t, e)
	// Root's grants: it may create a session.
	c.MustCall("createSession", map[string]any{"channel": "ahp-session:/99999999-0000-4000-8000-0000000000e2", "provider": "script"})
	if _, resp, err := ahptest.DialRaw("ws://"+d.Addr(), e.ConnectionToken+"x"); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("a wrong token: err %v resp %v, want 401", err, resp)
	}
	old := e.ConnectionToken
	closeDaemon(t, d)

	d = start()
	e = readOwnEntry(t, d, ud)
	if e.ConnectionToken == old {
		t.Fatal("the restarted daemon published the same token")
	}
	if _, resp, err := ahptest.DialRaw("ws://"+d.Addr(), old); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("the last run's token: err %v resp %v, want 401", err, resp)
	}
	dialEntry(t, e)
	if files := entryFiles(t, ud); len(files) != 1 {
		t.Errorf("after a restart the registry holds %v, want the new entry only", files)
	}
}

// A grant-token-only daemon (no connectionToken) still needs a token at the
// door: the entry gets one with root's grants.
func TestLocalEndpointTokenWithGrantTokensOnly(t *testing.T) {
	t.Parallel()
	ud := t.TempDir()
	d := startLocal(t, daemon.Options{}, func(c *daemon.Config) {
		c.VSCodeUserData = []string{ud}
		c.Tokens = []daemon.TokenConfig{{Token: "reader", Principal: "user:r", Grants: []string{"session:read"}}}
	})
	e := readOwnEntry(t, d, ud)
	if e.ConnectionToken == "" || e.ConnectionToken == "reader" {
		t.Fatalf("entry token %q: want a root token of its own", e.ConnectionToken)
	}
	c := dialEntry(t, e)
	c.MustCall("createSession", map[string]any{"channel": "ahp-session:/99999999-0000-4000-8000-0000000000e3", "provider": "script"})
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if localendpoint.Alive(c.Process.Pid) {
		t.Skipf("pid %d was reused at once", c.Process.Pid)
	}
	return c.Process.Pid
}

// A start removes the entry a killed ahpd left (its pid is dead) and
// leaves an editor's entries alone, a live one and a dead one.
func TestLocalEndpointPrunesDeadAndLeavesEditors(t *testing.T) {
	t.Parallel()
	ud := t.TempDir()
	dead := deadPID(t)
	stale := localendpoint.NewStandalone(dead, 4000, ahp.ProtocolVersion, "old")
	liveEditor := localendpoint.Entry{SchemaVersion: 2, Type: localendpoint.TypeEditor, PID: os.Getpid(), InstanceID: "live-editor",
		ProtocolVersion: "0.8.0", ConnectionToken: "t", Endpoint: localendpoint.Endpoint{Type: "socket", Path: "/tmp/vscode-ah/x.sock"}}
	deadEditor := liveEditor
	deadEditor.PID, deadEditor.InstanceID = dead, "dead-editor"
	for _, e := range []localendpoint.Entry{stale, liveEditor, deadEditor} {
		if _, err := localendpoint.Publish(ud, e); err != nil {
			t.Fatal(err)
		}
	}
	d := startLocal(t, daemon.Options{VSCodeUserData: []string{ud}}, nil)
	own := readOwnEntry(t, d, ud)
	want := []string{own.FileName(), liveEditor.FileName(), deadEditor.FileName()}
	slices.Sort(want)
	if got := entryFiles(t, ud); !slices.Equal(got, want) {
		t.Errorf("registry holds %v\nwant %v (the dead standalone %s pruned)", got, want, stale.FileName())
	}
	closeDaemon(t, d)
	want = []string{liveEditor.FileName(), deadEditor.FileName()}
	slices.Sort(want)
	if got := entryFiles(t, ud); !slices.Equal(got, want) {
		t.Errorf("after stop the registry holds %v, want the editors' %v", got, want)
	}
}

// noLocalEndpoint writes nothing, not even in the folders ahpd serve found;
// the same folders without it get the entry.
func TestLocalEndpointOptOut(t *testing.T) {
	t.Parallel()
	ud := t.TempDir()
	d := startLocal(t, daemon.Options{VSCodeUserData: []string{ud}}, func(c *daemon.Config) { c.NoLocalEndpoint = true })
	if paths := d.LocalEndpoints(); len(paths) != 0 {
		t.Errorf("opted out, the daemon wrote %v", paths)
	}
	if des, _ := os.ReadDir(ud); len(des) != 0 {
		t.Errorf("opted out, the user-data dir holds %v", des)
	}
	closeDaemon(t, d)
	d = startLocal(t, daemon.Options{VSCodeUserData: []string{ud}}, nil)
	readOwnEntry(t, d, ud)
	// And a daemon given no folder at all (Start without ahpd serve's
	// finds) writes nowhere.
	if paths := startLocal(t, daemon.Options{}, nil).LocalEndpoints(); len(paths) != 0 {
		t.Errorf("a daemon with no folder wrote %v", paths)
	}
}

// noLocalEndpoint and vscodeUserData together are refused (exit 2).
func TestLocalEndpointConfigConflict(t *testing.T) {
	t.Parallel()
	cfg := daemon.Defaults()
	cfg.NoLocalEndpoint = true
	cfg.VSCodeUserData = []string{"/tmp/x"}
	var ke *daemon.KeyError
	if err := cfg.Validate(); !errors.As(err, &ke) || ke.Key != "noLocalEndpoint" || !errors.Is(err, daemon.ErrUsage) {
		t.Fatalf("Validate = %v, want a usage error on noLocalEndpoint", err)
	}
	cfg.NoLocalEndpoint = false
	cfg.VSCodeUserData = []string{" "}
	if err := cfg.Validate(); !errors.As(err, &ke) || ke.Key != "vscodeUserData[0]" {
		t.Fatalf("Validate = %v, want a usage error on vscodeUserData[0]", err)
	}
}

// A registry dir that is a link (here the entries dir, pointing outside) is
// refused: nothing is written through it, and the daemon serves anyway.
func TestLocalEndpointRefusesLinkedEntriesDir(t *testing.T) {
	t.Parallel()
	ud, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ud, "agent-host", "local-endpoint"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, localendpoint.EntriesDir(ud)); err != nil {
		t.Fatal(err)
	}
	d := startLocal(t, daemon.Options{}, func(c *daemon.Config) { c.VSCodeUserData = []string{ud} })
	if paths := d.LocalEndpoints(); len(paths) != 0 {
		t.Errorf("wrote %v through a linked entries dir", paths)
	}
	if des, _ := os.ReadDir(outside); len(des) != 0 {
		t.Errorf("wrote %v outside the user-data dir", des)
	}
	c := ahptest.Dial(t, d.URL(), "")
	c.Initialize("still-serving", ahp.RootURI)
}

// Two folders (say Code and Code - Insiders) each get the same entry.
func TestLocalEndpointEveryFolder(t *testing.T) {
	t.Parallel()
	stable, insiders := t.TempDir(), t.TempDir()
	d := startLocal(t, daemon.Options{VSCodeUserData: []string{stable, insiders}}, nil)
	paths := d.LocalEndpoints()
	if len(paths) != 2 || filepath.Base(paths[0]) != filepath.Base(paths[1]) {
		t.Fatalf("wrote %v, want the same entry in both folders", paths)
	}
	closeDaemon(t, d)
	if len(entryFiles(t, stable))+len(entryFiles(t, insiders)) != 0 {
		t.Error("stop left an entry behind")
	}
}
