package chat

import (
	"context"
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

const reasonDirectoriesRunning = "A chat's directories cannot change while a turn runs."

// directories changes the directories a chat works in at a client's
// action. It is part of the chat actor and runs only on the actor's
// goroutine.
type directories struct{ c *Chat }

// change changes the directories a chat works in: always a
// subset of its session's (C-FIRST-25..27). The change starts this chat's
// backend again, resumed, and no other chat's (C-FIRST-28, 29).
func (ds *directories) change(cl Client, origin *ahp.ActionOrigin, a ahp.Action) {
	c := ds.c
	if c.running() {
		c.refuse(cl, origin, a, reasonDirectoriesRunning)
		return
	}
	session := ds.session()
	if set, ok := a.(ahp.ChatWorkingDirectorySet); ok && !slices.Contains(session, set.Directory) {
		c.refuse(cl, origin, a, set.Directory+" is not a directory of this chat's session; a chat works in its session's directories or a subset of them.")
		return
	}
	c.apply(a, origin)
	dirs := c.st().WorkingDirectories
	if len(dirs) == 0 {
		dirs = session
	}
	paths, err := ahp.LocalPaths(dirs)
	if err != nil {
		c.log.Warn("chat directories", "err", err)
		return
	}
	c.cfg.Directories = paths
	c.backends.closeShell() // the next ! command runs in the new first directory
	if c.backends.conv != nil {
		c.backends.shut() // its process slot goes to the new process
		if err := c.backends.ensure(); err != nil {
			c.log.Warn("restart chat in its new directories", "err", err)
		}
	}
}

// session is the session's directories (URIs) as they are now.
func (ds *directories) session() []string {
	c := ds.c
	if c.cfg.SessionDirectories == nil {
		return nil
	}
	return c.cfg.SessionDirectories()
}

// Directories are the chat's directories as local paths, as they are now.
func (c *Chat) Directories(ctx context.Context) ([]string, error) {
	var dirs []string
	err := c.call(ctx, func() { dirs = slices.Clone(c.cfg.Directories) })
	return dirs, err
}
