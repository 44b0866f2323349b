//go:build !linux

package sandbox

import "errors"

func kernelABI() (int, string) { return 0, "Landlock is a Linux security module" }

func restrictAndExec(Policy, string, []string, []string) error {
	return errors.New("sandbox: Landlock is a Linux security module")
}
