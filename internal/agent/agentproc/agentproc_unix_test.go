//go:build unix

package agentproc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid still runs (a zombie waiting for its parent
// does not count), after a moment for the kill to land.
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	for range 50 {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || syscall.Kill(n, 0) != nil {
			return false
		}
		if i := lastParen(stat); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polls for the kill to land
	}
	return true
}

func lastParen(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i
		}
	}
	return -1
}

// TestSignalGroupReachesChildren: a kill of the group ends what the
// process started too.
func TestSignalGroupReachesChildren(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & echo $!; wait")
	SetGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child := strings.TrimSpace(string(buf[:n]))
	SignalGroup(cmd, syscall.SIGKILL)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the shell outlived the group's kill")
	}
	if alive(child) {
		t.Errorf("the shell's child %s outlived the group's kill", child)
	}
}
