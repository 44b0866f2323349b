package script

import (
	"context"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// FindConversation finds a conversation this script agent keeps (in
// memory), so tests can name a session the daemon never registered.
func (s *Script) FindConversation(ctx context.Context, id string) (agent.ConversationInfo, bool, error) {
	s.mu.Lock()
	rec := s.convs[id]
	var title string
	if rec != nil {
		title = rec.first
	}
	s.mu.Unlock()
	if rec == nil {
		return agent.ConversationInfo{}, false, nil
	}
	return agent.ConversationInfo{ID: id, Title: title, Created: time.Now().UTC(), Modified: time.Now().UTC()}, true, nil
}

var _ agent.Catalogue = (*Script)(nil)
