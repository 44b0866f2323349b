package agentproc

import (
	"errors"
	"fmt"
	"os/exec"
)

// Locate finds a CLI: configured, when set (a path, or a name looked up
// on PATH), else name on PATH. It looks again on every call, so a CLI
// installed after start is found. Where the CLI is missing the error is
// hint, with why when the configured one failed. Production code looks
// nowhere else: tests give the path of their install (testdata/agents,
// fakemodel.Agent) as the configured one.
func Locate(configured, name, hint string) (string, error) {
	if configured != "" {
		p, err := exec.LookPath(configured)
		if err != nil {
			return "", fmt.Errorf("%s: %w", hint, err)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", errors.New(hint)
	}
	return p, nil
}
