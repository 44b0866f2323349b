package script

import (
	"context"
	"time"

	"github.com/ahpd/ahpd/internal/agent"
)

// FindConversation finds a conversation this script agent keeps (in
// memory), so tests can name a session the daemon never registered.
func (s *Script) FindConversation(ctx context.Context, id string) (agent.ConversationInfo, bool, error) {
	h := s.History(id)
	if h == nil {
		return agent.ConversationInfo{}, false, nil
	}
	info := agent.ConversationInfo{ID: id, Created: time.Now().UTC(), Modified: time.Now().UTC()}
	if len(h) > 0 {
		info.Title = h[0]
	}
	return info, true, nil
}

var _ agent.Catalogue = (*Script)(nil)
