package chat

// closeShell ends the chat's shell, the backend of its ! commands (host.go):
// a running command is interrupted (the chat unloads, closes, or works in
// other directories now).
func (c *Chat) closeShell() {
	if c.shell != nil {
		_ = c.shell.Close()
		c.shell = nil
	}
}

// closeHostCommands ends the conversation that answers host commands.
func (c *Chat) closeHostCommands() {
	if c.hostCmds != nil {
		_ = c.hostCmds.Close()
		c.hostCmds = nil
	}
}
