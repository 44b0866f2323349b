package chat

import (
	"context"

	"github.com/ahpd/ahpd/internal/ahp"
)

// CancelForShutdown ends the running turn, if any, the way a stop does
// (chat/turnCancelled, the agent told to stop, turns sent behind it ended
// unrun), after a systemNotification part saying notice. Both are stored
// before they are published, so every subscriber sees them and a restart
// reads the turn back cancelled rather than interrupted. The daemon calls
// it on SIGTERM before it closes the connections.
func (c *Chat) CancelForShutdown(ctx context.Context, notice string) error {
	return c.call(ctx, func() {
		t := c.eng.Active()
		if t == nil {
			return
		}
		c.apply(ahp.ChatResponsePart{TurnID: t.ID, Part: ahp.SystemNotificationPart(notice, nil)}, nil)
		c.eng.Stop(nil, ahp.ChatTurnCancelled{TurnID: t.ID})
	})
}
