package session

import (
	"context"
	"errors"

	"github.com/ahpd/ahpd/internal/chat"
)

// CancelTurnsForShutdown ends the running turn of every loaded chat with
// chat/turnCancelled after a notice (chat.CancelForShutdown). Unloaded
// chats run nothing.
func (s *Session) CancelTurnsForShutdown(ctx context.Context, notice string) error {
	var actors []*chat.Chat
	if err := s.call(ctx, func() {
		for _, e := range s.chats {
			if e.actor != nil {
				actors = append(actors, e.actor)
			}
		}
	}); err != nil {
		return err
	}
	var errs []error
	for _, a := range actors {
		if err := a.CancelForShutdown(ctx, notice); err != nil && !errors.Is(err, chat.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
