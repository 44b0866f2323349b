package agentproc

import "os/exec"

// A Confiner is agent.OpenParams.Sandbox: given the program, argv and
// environment (nil: the daemon's) of a process about to start, it returns
// those to start instead (the sandbox launcher's). It is spelled on plain
// strings so the backend contract, which the turn engine imports, needs no
// os/exec.
type Confiner = func(path string, args, env []string) (string, []string, []string, error)

// ToCmd is c applied to a command after exec.Command and before Start;
// nil when c is nil (an unsandboxed session).
func ToCmd(c Confiner) func(*exec.Cmd) error {
	if c == nil {
		return nil
	}
	return func(cmd *exec.Cmd) error {
		if cmd.Err != nil {
			return cmd.Err
		}
		path, args, env, err := c(cmd.Path, cmd.Args, cmd.Env)
		if err != nil {
			return err
		}
		cmd.Path, cmd.Args, cmd.Env = path, args, env
		return nil
	}
}

// FromCmd is the Confiner of wrap, which rewrites a command in place (the
// sandbox package's Wrapper); nil when wrap is nil.
func FromCmd(wrap func(*exec.Cmd) error) Confiner {
	if wrap == nil {
		return nil
	}
	return func(path string, args, env []string) (string, []string, []string, error) {
		cmd := &exec.Cmd{Path: path, Args: args, Env: env}
		if err := wrap(cmd); err != nil {
			return "", nil, nil, err
		}
		return cmd.Path, cmd.Args, cmd.Env, nil
	}
}
