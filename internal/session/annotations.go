package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/bus"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/reduce"
)

// A session's annotations channel (<session>/annotations) holds the
// review comments clients anchor to its resources. The session actor owns
// it; it is kept in the session record's meta, stored before it is said.

// RecordMeta is what the session keeps in its record's opaque meta; the
// host writes it when it creates the session.
type RecordMeta struct {
	Annotations []ahp.Annotation `json:"annotations,omitempty"`
	// Sandbox is the session's sandbox mode, fixed at createSession
	// (issue 36): what confines its processes, whatever its config values
	// later say (a replacing session/configChanged may drop them).
	Sandbox string `json:"sandbox,omitempty"`
	// Repositories are the repositories the session was created from
	// (createSession's repositories), never changed after.
	Repositories []ahp.RepositorySource `json:"repositories,omitempty"`
	// CreatedBy is the session and chat whose agent made this session
	// (the create_session tool), nil for one a client made.
	CreatedBy *CreatedBy `json:"createdBy,omitempty"`
}

// CreatedBy names where a delegated session came from, and how deep in a
// chain of delegations it is (1: made by a session a client made).
type CreatedBy struct {
	Session string `json:"session"`
	Chat    string `json:"chat"`
	Depth   int    `json:"depth"`
}

// CreatedByKey is the _meta key of a delegated session's state naming
// where it came from (VS Code's key).
const CreatedByKey = "agentHost/createdBySession"

// ParseRecordMeta reads a record's meta; one this version cannot read is
// empty.
func ParseRecordMeta(raw json.RawMessage) RecordMeta {
	var m RecordMeta
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // a meta this version cannot read starts empty
	}
	return m
}

// SubscribeAnnotations subscribes sub to the session's annotations channel.
func (s *Session) SubscribeAnnotations(ctx context.Context, sub bus.Subscriber) (ahp.Snapshot, error) {
	var snap ahp.Snapshot
	var merr error
	uri := ahp.AnnotationsURI(s.uri)
	err := s.call(ctx, func() {
		seq := s.cfg.Env.Bus.Subscribe(sub, uri)
		raw, err := json.Marshal(s.annotations)
		if err != nil {
			merr = fmt.Errorf("marshal annotations of %s: %w", s.uri, err)
			return
		}
		snap = ahp.Snapshot{Resource: uri, State: json.RawMessage(raw), FromSeq: seq}
	})
	if err != nil {
		return ahp.Snapshot{}, err
	}
	return snap, merr
}

// DispatchAnnotations applies a client's annotations action.
func (s *Session) DispatchAnnotations(cl chat.Client, clientSeq int64, a ahp.Action) error {
	origin := &ahp.ActionOrigin{ClientID: cl.ID, ClientSeq: clientSeq}
	return s.do(func() { s.onAnnotationsAction(cl, origin, a) })
}

func (s *Session) onAnnotationsAction(cl chat.Client, origin *ahp.ActionOrigin, a ahp.Action) {
	uri := ahp.AnnotationsURI(s.uri)
	refuse := func(reason string) { s.cfg.Env.Bus.Refuse(cl.Sub, uri, a, origin, reason) }
	if !ahp.IsClientDispatchable(a.ActionType()) {
		refuse("Action is not client-dispatchable.")
		return
	}
	if g := ahp.GrantFor(a.ActionType()); g != "" && cl.Can != nil && !cl.Can(g) {
		refuse(fmt.Sprintf("Permission denied: %s needs the grant %s.", a.ActionType(), g))
		return
	}
	if set, ok := a.(ahp.AnnotationsSet); ok && set.Annotation.Origin.Session != "" && set.Annotation.Origin.Session != s.uri {
		refuse(fmt.Sprintf("An annotation of %s names another session, %s.", s.uri, set.Annotation.Origin.Session))
		return
	}
	reduce.Annotations(&s.annotations, a)
	meta := ParseRecordMeta(s.record.Meta)
	meta.Annotations = s.annotations.Annotations
	raw, err := json.Marshal(meta)
	if err != nil {
		s.log.Error("marshal session meta", "err", err)
		return
	}
	s.record.Meta = raw
	s.commitRecord(a.ActionType())
	s.cfg.Env.Bus.Publish(uri, a, origin)
}
