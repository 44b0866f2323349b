package daemon_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/daemon"
	"github.com/ahpd/ahpd/internal/resources"
	"github.com/ahpd/ahpd/internal/terminal"
	"github.com/ahpd/ahpd/internal/testutil"
	"github.com/ahpd/ahpd/internal/testutil/ahptest"
	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// The refusals the suites do not test: paths out of the served
// directories, grants, sizes, a watch's and a terminal's lifetime, who may
// open a terminal, and a terminal that prints without end.

// TestResourcesConfinedToServedPaths tries every way out of the served
// path with every resource command: an absolute path outside, ".." out of
// it, a symlink to a file outside and one to a folder outside. Each is
// refused and nothing outside is read or written. The file outside is a
// FIFO: opening it for reading would block, so a command that read it
// would hang the test instead of answering.
func TestResourcesConfinedToServedPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("escape")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := syscall.Mkfifo(secret, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "kept.txt"), "kept")
	if err := os.Symlink(secret, filepath.Join(e.workDir, "link-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.workDir, "link-dir")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.workDir, "inside.txt"), "inside")
	before := snapshotDir(t, outside)

	ways := map[string]string{
		"absolute":       secret,
		"dot-dot":        e.workDir + "/../" + filepath.Base(outside) + "/secret",
		"symlinked file": filepath.Join(e.workDir, "link-file"),
		"symlinked dir":  filepath.Join(e.workDir, "link-dir", "secret"),
	}
	dirWays := map[string]string{
		"absolute":      outside,
		"dot-dot":       e.workDir + "/../" + filepath.Base(outside),
		"symlinked dir": filepath.Join(e.workDir, "link-dir"),
	}
	inside := ahp.FileURI(filepath.Join(e.workDir, "inside.txt"))
	call := func(method string, p map[string]any) *ahptest.RPCError {
		p["channel"] = ahp.RootURI
		done := make(chan *ahptest.RPCError, 1)
		go func() { _, err := c.Call(method, p); done <- err }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %v hung: it opened the FIFO outside", method, p)
			return nil
		}
	}
	refused := func(way, method string, err *ahptest.RPCError) {
		t.Helper()
		if err == nil {
			t.Errorf("%s through %s was taken", method, way)
		} else if err.Code != ahp.CodePermissionDenied && err.Code != ahp.CodeInvalidParams {
			t.Errorf("%s through %s: %d %s, want a refusal", method, way, err.Code, err.Message)
		}
	}
	for way, path := range ways {
		uri := ahp.FileURI(path)
		refused(way, "resourceRead", call("resourceRead", map[string]any{"uri": uri}))
		refused(way, "resourceResolve", call("resourceResolve", map[string]any{"uri": uri}))
		refused(way, "resourceWrite", call("resourceWrite", map[string]any{"uri": uri, "data": "x", "encoding": "utf-8"}))
		refused(way, "resourceCopy from", call("resourceCopy", map[string]any{"source": uri, "destination": ahp.FileURI(filepath.Join(e.workDir, "copied"))}))
		refused(way, "resourceRequest", call("resourceRequest", map[string]any{"uri": uri, "read": true}))
	}
	for way, dir := range dirWays {
		uri := ahp.FileURI(dir)
		refused(way, "resourceList", call("resourceList", map[string]any{"uri": uri}))
		refused(way, "resourceWrite new", call("resourceWrite", map[string]any{"uri": ahp.FileURI(filepath.Join(dir, "new.txt")), "data": "x", "encoding": "utf-8"}))
		refused(way, "resourceCopy to", call("resourceCopy", map[string]any{"source": inside, "destination": ahp.FileURI(filepath.Join(dir, "copied"))}))
		refused(way, "resourceMove to", call("resourceMove", map[string]any{"source": inside, "destination": ahp.FileURI(filepath.Join(dir, "moved"))}))
		refused(way, "resourceMkdir", call("resourceMkdir", map[string]any{"uri": ahp.FileURI(filepath.Join(dir, "made", "deeper"))}))
		refused(way, "createResourceWatch", call("createResourceWatch", map[string]any{"uri": uri}))
		refused(way, "resourceDelete", call("resourceDelete", map[string]any{"uri": ahp.FileURI(filepath.Join(dir, "kept.txt"))}))
		refused(way, "resourceMove from", call("resourceMove", map[string]any{"source": ahp.FileURI(filepath.Join(dir, "kept.txt")), "destination": ahp.FileURI(filepath.Join(e.workDir, "stolen"))}))
	}
	// A relative path and another scheme are refused too.
	refused("relative", "resourceRead", call("resourceRead", map[string]any{"uri": "file:inside.txt"}))
	refused("scheme", "resourceRead", call("resourceRead", map[string]any{"uri": "ftp://x/etc/passwd"}))
	// A client's files are its own (TestClientFilesGrants): one that is not
	// connected is not found, and a path with ".." is refused.
	if err := call("resourceRead", map[string]any{"uri": "vscode-agent-client://x/file/-/etc/passwd"}); err == nil || err.Code != ahp.CodeNotFound {
		t.Errorf("a file of a client that is not connected: %v, want %d", err, ahp.CodeNotFound)
	}
	refused("client dot-dot", "resourceRead", call("resourceRead", map[string]any{"uri": "vscode-agent-client://x/file/-/tmp/../etc/passwd"}))
	// A served directory itself is not deleted or moved away.
	refused("root", "resourceDelete", call("resourceDelete", map[string]any{"uri": ahp.FileURI(e.workDir), "recursive": true}))
	// The links themselves are inside: deleting one removes the link, not
	// what it leads to; copying a folder copies a link inside as a link.
	writeFile(t, filepath.Join(e.workDir, "tree", "a.txt"), "a")
	if err := os.Symlink(outside, filepath.Join(e.workDir, "tree", "out")); err != nil {
		t.Fatal(err)
	}
	if err := call("resourceCopy", map[string]any{"source": ahp.FileURI(filepath.Join(e.workDir, "tree")), "destination": ahp.FileURI(filepath.Join(e.workDir, "tree2"))}); err != nil {
		t.Fatalf("copy of a tree with a link out: %s", err.Message)
	}
	if fi, err := os.Lstat(filepath.Join(e.workDir, "tree2", "out")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link in the copied tree is %v (%v), want a link", fi, err)
	}
	if err := call("resourceDelete", map[string]any{"uri": ahp.FileURI(filepath.Join(e.workDir, "link-dir")), "recursive": true}); err != nil {
		t.Fatalf("delete of the link: %s", err.Message)
	}
	if exists(filepath.Join(e.workDir, "link-dir")) {
		t.Fatal("the link is still there")
	}
	if after := snapshotDir(t, outside); after != before {
		t.Fatalf("outside changed:\nbefore %s\nafter  %s", before, after)
	}
	// And inside, the same commands work.
	if err := call("resourceRead", map[string]any{"uri": inside}); err != nil {
		t.Fatalf("read inside: %s", err.Message)
	}
}

// snapshotDir lists dir's entries with their modes, sizes and contents
// (never opening a FIFO).
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString(";")
		return nil
	})
	return b.String()
}

// TestResourceGrants: resource:read lets a token list and read, not write;
// a token with neither is refused every command.
func TestResourceGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{
			{Token: "reader", Principal: "user:reader", Grants: []string{"session:read", "resource:read"}},
			{Token: "nobody", Principal: "user:nobody", Grants: []string{"session:*", "chat:*"}},
		}
	})
	writeFile(t, filepath.Join(e.workDir, "f.txt"), "content")
	file := ahp.FileURI(filepath.Join(e.workDir, "f.txt"))
	reader := ahptest.Dial(t, e.d.URL(), "reader")
	reader.Initialize("reader")
	nobody := ahptest.Dial(t, e.d.URL(), "nobody")
	nobody.Initialize("nobody")
	p := func(kv ...any) map[string]any {
		m := map[string]any{"channel": ahp.RootURI}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	reads := map[string]map[string]any{
		"resourceRead": p("uri", file), "resourceList": p("uri", ahp.FileURI(e.workDir)), "resourceResolve": p("uri", file),
		"createResourceWatch": p("uri", ahp.FileURI(e.workDir)),
	}
	writes := map[string]map[string]any{
		"resourceWrite": p("uri", file, "data", "x", "encoding", "utf-8"), "resourceDelete": p("uri", file),
		"resourceMkdir": p("uri", ahp.FileURI(filepath.Join(e.workDir, "d"))), "resourceMove": p("source", file, "destination", file+".2"),
		"resourceCopy": p("source", file, "destination", file+".3"),
	}
	for m, params := range reads {
		if _, err := reader.Call(m, params); err != nil {
			t.Errorf("reader %s: %s", m, err.Message)
		}
		_, err := nobody.Call(m, params)
		wantCode(t, err, ahp.CodePermissionDenied, "resource:read")
	}
	for m, params := range writes {
		_, err := reader.Call(m, params)
		wantCode(t, err, ahp.CodePermissionDenied, "resource:write")
		_, err = nobody.Call(m, params)
		wantCode(t, err, ahp.CodePermissionDenied, "resource:")
	}
	if got := readText(t, filepath.Join(e.workDir, "f.txt")); got != "content" || exists(filepath.Join(e.workDir, "d")) {
		t.Fatalf("a refused write changed the files: %q", got)
	}
}

// TestResourceSizes: a write over the 8 MiB limit is refused naming it; a
// frame over maxFrameBytes closes the connection (1009) and writes nothing.
func TestResourceSizes(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("sends and reads 8 MiB frames, which the race detector slows past the timeouts; runs without -race (make check runs it so)")
	}
	e := newEnv(t)
	c := e.client("sizes")
	big := ahp.FileURI(filepath.Join(e.workDir, "big.bin"))
	data := base64.StdEncoding.EncodeToString(make([]byte, resources.MaxBytes+1))
	_, err := c.Call("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": big, "data": data, "encoding": "base64"})
	wantCode(t, err, ahp.CodeInvalidParams, "write limit")
	if exists(filepath.Join(e.workDir, "big.bin")) {
		t.Fatal("the refused write created the file")
	}
	// A file over the read limit is refused too.
	if err := os.WriteFile(filepath.Join(e.workDir, "huge.bin"), make([]byte, resources.MaxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Call("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": ahp.FileURI(filepath.Join(e.workDir, "huge.bin"))})
	wantCode(t, err, ahp.CodeInvalidParams, "read limit")

	small := newEnv(t, func(c *daemon.Config) { c.MaxFrameBytes = 64 << 10 })
	ws, _, derr := ahptest.DialRaw(small.d.URL(), small.cfg.ConnectionToken)
	if derr != nil {
		t.Fatal(derr)
	}
	defer ws.Close()
	frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resourceWrite", "params": map[string]any{
		"channel": ahp.RootURI, "uri": ahp.FileURI(filepath.Join(small.workDir, "over.txt")), "data": strings.Repeat("x", 100<<10), "encoding": "utf-8"}})
	// The daemon refuses the frame from its header and closes without
	// reading the rest: the write may fail part way, the close frame is
	// on its way all the same.
	_ = ws.WriteMessage(websocket.TextMessage, frame)
	_ = ws.SetReadDeadline(time.Now().Add(ahptest.Timeout))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("a write over maxFrameBytes: %v, want close 1009", err)
	}
	if exists(filepath.Join(small.workDir, "over.txt")) {
		t.Fatal("the oversized write was written")
	}
}

// TestResourceWatchLifetime: a malformed watch channel is refused; a watch
// dies with the connection that opened it, with its last subscriber, and
// with its folder (whose removal it reports first).
func TestResourceWatchLifetime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("watcher")
	create := func(cl *ahptest.Client, dir string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		res := cl.MustCall("createResourceWatch", map[string]any{"channel": ahp.RootURI, "uri": ahp.FileURI(dir)})
		return decode[struct{ Channel string }](t, res).Channel
	}
	subscribeErr := func(ch string) *ahptest.RPCError {
		_, err := c.Call("subscribe", map[string]any{"channel": ch})
		return err
	}
	for _, bad := range []string{"ahp-resource-watch:", "ahp-resource-watch:/not-an-id", "ahp-resource-watch:/" + uuid.NewString() + "/x", "ahp-resource-watch://host/" + uuid.NewString()} {
		wantCode(t, subscribeErr(bad), ahp.CodeInvalidParams, "not a resource watch channel")
	}
	wantCode(t, subscribeErr("ahp-resource-watch:/"+uuid.NewString()), ahp.ErrResourceNotFound.Code, "")
	// A client dispatching on a watch is refused.
	ch := create(c, filepath.Join(e.workDir, "w0"))
	c.Subscribe(ch)
	if echo := c.AwaitEcho(c.Dispatch(ch, map[string]any{"type": "resourceWatch/changed", "changes": map[string]any{"items": []any{}}})); echo.RejectionReason == "" {
		t.Fatal("a client's resourceWatch/changed was taken")
	}

	other := e.client("opener")
	gone := create(other, filepath.Join(e.workDir, "w1"))
	other.Close()
	waitGone(t, subscribeErr, gone)

	last := create(c, filepath.Join(e.workDir, "w2"))
	c.Subscribe(last)
	c.Notify("unsubscribe", map[string]any{"channel": last})
	waitGone(t, subscribeErr, last)

	dir := filepath.Join(e.workDir, "w3")
	folder := create(c, dir)
	c.Subscribe(folder)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	c.AwaitEnvelope("the folder's removal", func(env ahptest.Envelope) bool {
		return env.Channel == folder && hasChange(env, ahp.FileURI(dir), "deleted")
	})
	waitGone(t, subscribeErr, folder)
}

func waitGone(t *testing.T, subscribeErr func(string) *ahptest.RPCError, ch string) {
	t.Helper()
	deadline := time.Now().Add(ahptest.Timeout)
	for subscribeErr(ch) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("watch %s is still there", ch)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTerminalOutlivesItsClient: a terminal runs on after the client that
// opened it leaves; another client subscribes and types into it, and a
// client that dropped reconnects, is replayed what it missed and goes on.
func TestTerminalOutlivesItsClient(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	e := newEnv(t)
	opener := e.client("opener")
	uri := newTerminalURI()
	opener.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "opener"}})
	opener.Subscribe(uri)
	opener.AwaitEcho(typeInto(opener, uri, `echo BEFORE_"LEAVING"`))
	opener.Close()

	other := e.client("other")
	awaitOutput(t, other, uri, "BEFORE_LEAVING")
	typeInto(other, uri, `echo OTHER_"TYPED"`)
	awaitOutput(t, other, uri, "OTHER_TYPED")

	dropped := e.client("dropped")
	_, seen := dropped.Subscribe(uri)
	dropped.Close()
	typeInto(other, uri, `echo WHILE_"AWAY"`)
	awaitOutput(t, other, uri, "WHILE_AWAY")

	back := ahptest.Dial(t, e.d.URL(), e.cfg.ConnectionToken)
	back.ID = "dropped" // who reconnect says it is
	res := back.MustCall("reconnect", map[string]any{"channel": ahp.RootURI, "clientId": "dropped", "lastSeenServerSeq": seen, "subscriptions": []string{uri}})
	r := decode[struct {
		Type    string             `json:"type"`
		Actions []ahptest.Envelope `json:"actions"`
		Missing []string           `json:"missing"`
	}](t, res)
	var replayed strings.Builder
	for _, a := range r.Actions {
		var d struct {
			Type, Data string
		}
		_ = json.Unmarshal(a.Action, &d)
		if a.Channel == uri && d.Type == "terminal/data" {
			replayed.WriteString(d.Data)
		}
	}
	if r.Type != "replay" || len(r.Missing) != 0 || !strings.Contains(replayed.String(), "WHILE_AWAY") {
		t.Fatalf("reconnect %s", res)
	}
	seq := typeInto(back, uri, `echo BACK_"AGAIN"`)
	if echo := back.AwaitEcho(seq); echo.RejectionReason != "" {
		t.Fatalf("the reconnected client's input was refused: %s", echo.RejectionReason)
	}
	back.AwaitEnvelope("BACK_AGAIN", func(env ahptest.Envelope) bool {
		var d string
		_ = env.Field("data", &d)
		return env.Channel == uri && strings.Contains(d, "BACK_AGAIN")
	})
}

// TestTerminalOnlyForOwnerOrRoot: a terminal is a shell with the daemon's
// rights, the rule of ! commands: another user may not open one in root's
// session or the served path, may open one in a session of their own, and
// may neither read nor type into root's. A cwd outside the served paths is
// refused to root too.
func TestTerminalOnlyForOwnerOrRoot(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	e := newEnv(t, func(c *daemon.Config) {
		c.Tokens = []daemon.TokenConfig{
			{Token: "bob-token", Principal: "user:bob", Grants: []string{"*"}},
			{Token: "eve-token", Principal: "user:eve", Grants: []string{"session:*", "chat:*", "resource:read"}},
		}
	})
	root := e.client("root")
	rootDir := filepath.Join(e.workDir, "root-ws")
	bobDir := filepath.Join(e.workDir, "bob-ws")
	for _, d := range []string{rootDir, bobDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root.MustCall("createSession", map[string]any{"channel": "ahp-session:/7e57e57e-0000-4000-8000-000000001101", "provider": "script", "workingDirectories": []string{ahp.FileURI(rootDir)}})
	bob := ahptest.Dial(t, e.d.URL(), "bob-token")
	bob.Initialize("bob", ahp.RootURI)
	create := func(c *ahptest.Client, dir string) (string, *ahptest.RPCError) {
		uri := newTerminalURI()
		p := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "x"}}
		if dir != "" {
			p["cwd"] = ahp.FileURI(dir)
		}
		_, err := c.Call("createTerminal", p)
		return uri, err
	}
	for _, dir := range []string{rootDir, ""} {
		_, err := create(bob, dir)
		wantCode(t, err, ahp.CodePermissionDenied, "only root or the owner")
	}
	_, err := create(root, t.TempDir())
	wantCode(t, err, ahp.CodePermissionDenied, "outside")
	bob.MustCall("createSession", map[string]any{"channel": "ahp-session:/7e57e57e-0000-4000-8000-000000001102", "provider": "script", "workingDirectories": []string{ahp.FileURI(bobDir)}})
	bobs, err := create(bob, bobDir)
	if err != nil {
		t.Fatalf("bob's terminal in his own session: %s", err.Message)
	}
	awaitOutput(t, bob, bobs, "") // bob reads his own
	roots, err := create(root, rootDir)
	if err != nil {
		t.Fatal(err.Message)
	}
	if _, err := bob.Call("subscribe", map[string]any{"channel": roots}); err == nil {
		t.Fatal("bob read root's terminal")
	}
	if echo := bob.AwaitEcho(typeInto(bob, roots, "touch bob-was-here")); echo.RejectionReason == "" {
		t.Fatal("bob typed into root's terminal")
	}
	if _, err := bob.Call("disposeTerminal", map[string]any{"channel": roots}); err == nil {
		t.Fatal("bob disposed root's terminal")
	}
	eve := ahptest.Dial(t, e.d.URL(), "eve-token")
	eve.Initialize("eve")
	if _, err := eve.Call("subscribe", map[string]any{"channel": bobs}); err == nil {
		t.Fatal("a token without terminal:read read a terminal")
	}
	_, err = create(eve, "")
	wantCode(t, err, ahp.CodePermissionDenied, "terminal:write")
	// Root's own input goes to the same terminal after bob's refused one:
	// once it has run, bob's would have too.
	typeInto(root, roots, `echo ROOT_"TYPED"`)
	awaitOutput(t, root, roots, "ROOT_TYPED")
	if exists(filepath.Join(rootDir, "bob-was-here")) {
		t.Fatal("bob's input ran")
	}
}

// TestTerminalPrintingForeverStaysBounded: a terminal prints 100 MiB. The
// daemon's heap stays bounded all along (the scrollback keeps 1 MiB, the
// replay log its envelopes), and the terminal's state holds the newest
// output only. It runs in make check, which runs it without -race.
func TestTerminalPrintingForeverStaysBounded(t *testing.T) {
	testutil.RequireCheck(t, "prints 100 MiB")
	if raceEnabled {
		t.Skip("prints 100 MiB, too slow under the race detector; runs without -race (make check runs it so)")
	}
	t.Setenv("SHELL", "/bin/sh")
	e := newEnv(t, func(c *daemon.Config) { c.ReplayLog = 256 })
	c := e.client("printer")
	dir := e.workDir
	uri := newTerminalURI()
	c.MustCall("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "printer"}})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	// Nobody subscribes while it prints: what the daemon holds is its own.
	typeInto(c, uri, `head -c 104857600 /dev/zero | tr '\0' x; echo; echo BIG_"DONE"; echo done > big.done`)
	peak := uint64(0)
	deadline := time.Now().Add(5 * time.Minute)
	for !exists(filepath.Join(dir, "big.done")) {
		if time.Now().After(deadline) {
			t.Fatal("100 MiB never finished printing")
		}
		time.Sleep(100 * time.Millisecond) // samples the heap while it prints
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	st := awaitOutput(t, c, uri, "BIG_DONE")
	growth := int64(peak) - int64(base)
	t.Logf("heap in use: %d MiB before, %d MiB at peak; state %d KiB", base>>20, peak>>20, len(st)>>10)
	// 100 MiB passed through; the daemon may hold the scrollback, the
	// replay log (256 envelopes of at most 32 KiB) and garbage between
	// collections, far from the 100 MiB.
	if growth > 64<<20 {
		t.Fatalf("the heap grew %d MiB while the terminal printed 100 MiB", growth>>20)
	}
	if len(st) > terminal.Scrollback+64<<10 {
		t.Fatalf("the terminal keeps %d bytes, over the %d-byte scrollback", len(st), terminal.Scrollback)
	}
}
