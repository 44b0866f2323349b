package turns

import "strings"

// Host commands are the slash commands the host answers itself, as VS
// Code's host does: a message such as "/rename Fix the tests" is routed to
// the host (RouteHost), never to the agent.

// CommandRename renames the chat it is sent in.
const CommandRename = "rename"

// HostCommandNames are the host's commands, in the order a / offers them.
var HostCommandNames = []string{CommandRename}

// HostCommand is a parsed host command.
type HostCommand struct {
	Name string
	// Arg is what follows the name, trimmed.
	Arg string
}

// ParseHostCommand reads text as a host command: "/name" alone or followed
// by white space. ok is false for anything else, which goes to the agent.
func ParseHostCommand(text string) (HostCommand, bool) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return HostCommand{}, false
	}
	end := strings.IndexAny(rest, " \t\r\n")
	name, arg := rest, ""
	if end >= 0 {
		name, arg = rest[:end], rest[end:]
	}
	for _, n := range HostCommandNames {
		if name == n {
			return HostCommand{Name: name, Arg: strings.TrimSpace(arg)}, true
		}
	}
	return HostCommand{}, false
}
