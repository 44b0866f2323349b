package host

import (
	"context"
	"errors"

	"github.com/ahpd/ahpd/internal/session"
)

// ShutdownNotice is the systemNotification a turn running when the daemon
// stops ends with.
const ShutdownNotice = "The host is stopping: this turn was cancelled."

// CancelTurnsForShutdown ends every running turn with chat/turnCancelled
// and ShutdownNotice, stored and published while the connections are still
// open, so every client sees the ending and a restart reads it back.
func (h *Host) CancelTurnsForShutdown(ctx context.Context) error {
	if err := h.awaitRestored(ctx); err != nil {
		return err
	}
	all := h.cat.all()
	var errs []error
	for _, s := range all {
		if err := s.CancelTurnsForShutdown(ctx, ShutdownNotice); err != nil && !errors.Is(err, session.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SessionCount is how many sessions the host holds (status, metrics).
func (h *Host) SessionCount() int {
	<-h.restored
	return h.cat.count()
}

// OpenSessions counts the sessions whose actor runs now; the others are
// listed from their records until something needs them.
func (h *Host) OpenSessions() int {
	<-h.restored
	return len(h.cat.all())
}
