package chat

// closeShell ends the chat's shell, the backend of its ! commands (backends.open):
// a running command is interrupted (the chat unloads, closes, or works in
// other directories now).
func (be *backends) closeShell() {
	if be.shell != nil {
		_ = be.shell.Close()
		be.shell = nil
	}
}

// closeHostCommands ends the conversation that answers host commands.
func (be *backends) closeHostCommands() {
	if be.hostCmds != nil {
		_ = be.hostCmds.Close()
		be.hostCmds = nil
	}
}
