package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dialEnv makes the test binary, run as a confined process, dial a TCP
// address and exit 0 when it connected, 3 when refused: a program that
// connects, where the shell has no /dev/tcp.
const dialEnv = "AHPD_SANDBOX_TEST_DIAL"

func TestMain(m *testing.M) {
	RunIfLauncher()
	if addr := os.Getenv(dialEnv); addr != "" {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// requireLandlock skips where the kernel cannot confine (not Linux, no
// Landlock): the tests below need the real kernel.
func requireLandlock(t *testing.T) {
	t.Helper()
	if abi, why := kernelABI(); abi < MinABI {
		t.Skipf("Landlock ABI %d here (%s): these tests need a kernel with ABI %d or later", abi, why, MinABI)
	}
}

// confinedRun runs script with sh through the launcher (this test
// binary) under p, in dir, and returns its combined output and error.
func confinedRun(t *testing.T, p Policy, dir, script string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	if err := Wrap(exe, p, cmd); err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestLauncherConfinesWritesReadsAndTempDir(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	work, outside, data, tmp := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "data"), filepath.Join(root, "data", "tmp", "s1")
	for _, d := range []string{work, outside, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "ahpd.db"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	site := NewSite(Site{TempRoot: filepath.Join(data, "tmp"), Secrets: []string{data}, Home: root})
	// $HOME holds the data dir: it is read around it.
	p, err := site.Policy(Workspace, "ahp-session:/s1", "script", []string{work}, Paths{})
	if err != nil {
		t.Fatalf("Policy: %v", err)
	}

	if out, err := confinedRun(t, p, work, "echo in > inside.txt && cat inside.txt"); err != nil || strings.TrimSpace(out) != "in" {
		t.Fatalf("a write inside the working directory: %v, %q", err, out)
	}
	out, err := confinedRun(t, p, work, "echo out > "+filepath.Join(root, "escape.txt"))
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("a write outside the session's folders: err %v, output %q; want Permission denied", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "escape.txt")); !os.IsNotExist(err) {
		t.Fatalf("the refused write left a file: %v", err)
	}
	out, err = confinedRun(t, p, work, "cat "+filepath.Join(data, "ahpd.db"))
	if err == nil || strings.Contains(out, "secret") {
		t.Fatalf("reading the data dir: err %v, output %q; want a refusal", err, out)
	}
	out, err = confinedRun(t, p, work, `echo t > "$TMPDIR/x" && echo "$TMPDIR"`)
	if err != nil || strings.TrimSpace(out) != resolve(p.TempDir) {
		t.Fatalf("TMPDIR: %v, %q; want the private %s", err, out, p.TempDir)
	}
	if abi, _ := kernelABI(); abi >= 6 {
		// Signals may not leave the sandbox: the daemon (here, the test)
		// cannot be killed by what it runs.
		out, err := confinedRun(t, p, work, "kill -0 "+strconv.Itoa(os.Getpid()))
		if err == nil {
			t.Fatalf("a confined process may signal the daemon: %q", out)
		}
	}
	if out, err := confinedRun(t, p, work, "cat "+filepath.Join(outside, "..", "outside")+" 2>&1; ls "+outside); err != nil {
		t.Fatalf("workspace reads home: %v, %q", err, out)
	}
}

func TestLauncherStrictHidesHome(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{filepath.Join(home, ".claude"), work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("private"), 0o600); err != nil {
		t.Fatal(err)
	}
	site := NewSite(Site{TempRoot: filepath.Join(root, "data", "tmp"), Secrets: []string{filepath.Join(root, "data")}, Home: home})
	p, err := site.Policy(Strict, "s", "claude", []string{work}, Paths{ReadWrite: []string{filepath.Join(home, ".claude")}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := confinedRun(t, p, work, "cat "+filepath.Join(home, "notes.txt")); err == nil || strings.Contains(out, "private") {
		t.Fatalf("strict read a file of $HOME: err %v, output %q", err, out)
	}
	if out, err := confinedRun(t, p, work, "echo s > "+filepath.Join(home, ".claude", "state")); err != nil {
		t.Fatalf("strict refused the backend's own directory: %v, %q", err, out)
	}
	site.Home = home
	wp, err := site.Policy(Workspace, "s", "claude", []string{work}, Paths{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := confinedRun(t, wp, work, "cat "+filepath.Join(home, "notes.txt")); err != nil || out != "private" {
		t.Fatalf("workspace read of $HOME: err %v, output %q", err, out)
	}
}

func TestLauncherRefusesWhenLandlockIsMissing(t *testing.T) {
	restore := SetUnavailableForTest("switched off by the test")
	defer restore()
	site := NewSite(Site{TempRoot: t.TempDir()})
	if _, err := site.Policy(Workspace, "s", "script", []string{t.TempDir()}, Paths{}); err == nil || !strings.Contains(err.Error(), "switched off by the test") {
		t.Fatalf("Policy with Landlock missing: %v; want the reason", err)
	}
	if ok, reason := site.Available(Off); !ok || reason != "" {
		t.Fatalf("off must stay available: %v %q", ok, reason)
	}
}

func TestLauncherWithoutPolicyRunsNothing(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(exe, Subcommand, "/bin/sh", "--", "sh", "-c", "touch "+marker)
	cmd.Env = withoutKey(os.Environ(), PolicyEnv)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != launchFailed {
		t.Fatalf("launcher without a policy: %v, %q; want exit %d", err, out, launchFailed)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the command ran unconfined")
	}
}

func TestWrapRefusesAPolicyTooLargeToHandOver(t *testing.T) {
	p := Policy{Mode: Workspace, TempDir: "/t"}
	for i := range 5000 {
		p.ReadOnly = append(p.ReadOnly, filepath.Join("/home/u", strings.Repeat("x", 20), strconv.Itoa(i)))
	}
	cmd := exec.Command("/bin/true")
	if err := Wrap("/usr/bin/ahpd", p, cmd); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("Wrap of a %d-path policy: %v; want it refused", len(p.ReadOnly), err)
	}
	if cmd.Path != "/bin/true" && cmd.Path != "/usr/bin/true" {
		t.Fatalf("a refused Wrap changed the command: %s", cmd.Path)
	}
	off := exec.Command("/bin/true")
	if err := Wrap("/usr/bin/ahpd", Policy{Mode: Off}, off); err != nil || off.Path == "/usr/bin/ahpd" {
		t.Fatalf("Wrap with mode off: %v, path %s; want the command untouched", err, off.Path)
	}
}

// TestLauncherLimitsTCPToModelPorts: under sandbox.network models a
// confined process connects to the ports its policy names (the model
// endpoints', the daemon's own) and is refused any other.
func TestLauncherLimitsTCPToModelPorts(t *testing.T) {
	requireLandlock(t)
	if abi, _ := kernelABI(); abi < NetworkMinABI {
		t.Skipf("Landlock ABI %d: TCP rules need %d", abi, NetworkMinABI)
	}
	listen := func() (net.Listener, uint16) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ln, uint16(ln.Addr().(*net.TCPAddr).Port)
	}
	model, modelPort := listen()
	own, ownPort := listen()
	other, _ := listen()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	site := NewSite(Site{TempRoot: filepath.Join(root, "data", "tmp"), Secrets: []string{filepath.Join(root, "data")}, Home: root,
		Network: NetworkModels, Ports: []uint16{modelPort}})
	site.AllowOwnPort(ownPort)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary is the program that dials: its folder is read.
	p, err := site.Policy(Workspace, "s", "script", []string{work}, Paths{ReadOnly: []string{filepath.Dir(exe)}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Network != NetworkModels || len(p.ConnectTCP) != 2 {
		t.Fatalf("policy %+v", p)
	}
	dial := func(addr string) (string, error) {
		cmd := exec.Command(exe)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), dialEnv+"="+addr)
		if err := Wrap(exe, p, cmd); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, ln := range []net.Listener{model, own} {
		if out, err := dial(ln.Addr().String()); err != nil {
			t.Errorf("a connection to the allowed %s: %v %q", ln.Addr(), err, out)
		}
	}
	if out, err := dial(other.Addr().String()); err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("a connection to the unlisted %s: %v %q; want permission denied", other.Addr(), err, out)
	}
	// Open (the default) governs no connection.
	site.Network = NetworkOpen
	open, err := site.Policy(Workspace, "s", "script", []string{work}, Paths{})
	if err != nil || open.Network != NetworkOpen || open.ConnectTCP != nil {
		t.Fatalf("open policy %+v, %v", open, err)
	}
}
