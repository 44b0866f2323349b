package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// configs are go-landlock's presets by ABI: a kernel's own ABI picks the
// preset that governs everything it can govern.
var configs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// kernelABI is the running kernel's Landlock ABI, 0 and why without one.
func kernelABI() (int, string) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Sprintf("the kernel answers landlock_create_ruleset with %v (Landlock not built in, or not in the lsm= list)", err)
	}
	return abi, ""
}

// restrictAndExec confines this thread by p in go-landlock's strict
// mode (a rule the kernel cannot apply is an error, never dropped) and
// execs path on it: the new program, and every child of it, is confined.
// It returns only on failure, before anything ran.
func restrictAndExec(p Policy, path string, argv, env []string) error {
	abi, why := kernelABI()
	if ok, reason := Availability(p.Mode, abi, why); !ok {
		return fmt.Errorf("sandbox %s: %s", p.Mode, reason)
	}
	if ok, reason := NetworkAvailability(p.Network, abi); !ok {
		return fmt.Errorf("sandbox %s: %s", p.Mode, reason)
	}
	cfg := configs[min(abi, len(configs)-1)]
	// The network stays open unless the policy limits TCP connections to
	// its ports (issue 36 §2): then connect(2) alone is governed, so a
	// dev server still binds and UDP (DNS) still flows. Signals may not
	// reach processes outside the sandbox (the daemon, other sessions).
	cfg.HandledAccessNet = 0
	cfg.Scoped &= landlock.ScopedSet(ll.ScopeSignal)
	rules, err := rulesFor(p, abi)
	if err != nil {
		return err
	}
	if p.Network == NetworkModels {
		cfg.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetConnectTCP)
		for _, port := range p.ConnectTCP {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("build the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("build the Landlock ruleset: nothing to enforce")
	}
	// The thread that restricts itself is the one that execs: the rules
	// are a thread's, and execve keeps only the calling thread.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	_ = unix.Close(fd)
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// rulesFor turns p's paths into Landlock rules: directories with the
// directory rights, single files with the file rights; a path that does
// not exist is skipped (it can be created only inside a writable one,
// which the rule of that one covers). Writable paths may also rename
// across their directories (refer, ABI 2) and use device ioctls (ABI 5:
// a terminal's size and modes).
func rulesFor(p Policy, abi int) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	add := func(path string, write bool) error {
		fi, err := os.Stat(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		var r landlock.FSRule
		switch {
		case fi.IsDir() && write:
			r = landlock.RWDirs(path)
		case fi.IsDir():
			r = landlock.RODirs(path)
		case write:
			r = landlock.RWFiles(path)
		default:
			r = landlock.ROFiles(path)
		}
		if write && abi >= 2 && fi.IsDir() {
			r = r.WithRefer()
		}
		if write && abi >= 5 {
			r = r.WithIoctlDev()
		}
		rules = append(rules, r)
		return nil
	}
	for _, path := range p.ReadWrite {
		if err := add(path, true); err != nil {
			return nil, err
		}
	}
	for _, path := range p.ReadOnly {
		if err := add(path, false); err != nil {
			return nil, err
		}
	}
	return rules, nil
}
