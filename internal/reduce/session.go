package reduce

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Session applies a session-channel action to s.
func Session(s *ahp.SessionState, a ahp.Action) {
	switch a := a.(type) {
	case ahp.SessionReady:
		s.Lifecycle = ahp.LifecycleReady
	case ahp.SessionCreationFailed:
		s.Lifecycle = ahp.LifecycleFailed
		e := a.Error
		s.CreationError = &e
	case ahp.SessionTitleChanged:
		s.Title = a.Title
	case ahp.SessionIsReadChanged:
		s.Status = s.Status.With(ahp.StatusIsRead, a.IsRead)
	case ahp.SessionIsArchivedChanged:
		s.Status = s.Status.With(ahp.StatusIsArchived, a.IsArchived)
	case ahp.SessionActivityChanged:
		s.Activity = a.Activity
	case ahp.SessionMetaChanged:
		s.Meta = a.Meta

	case ahp.SessionChatAdded:
		next := slices.Clone(s.Chats)
		if i := chatIndex(next, a.Summary.Resource); i >= 0 {
			next[i] = a.Summary
		} else {
			next = append(next, a.Summary)
		}
		s.Chats = next
	case ahp.SessionChatRemoved:
		i := chatIndex(s.Chats, a.Chat)
		if i < 0 {
			return
		}
		s.Chats = without(s.Chats, i)
		if s.DefaultChat == a.Chat {
			s.DefaultChat = ""
		}
	case ahp.SessionChatUpdated:
		i := chatIndex(s.Chats, a.Chat)
		if i < 0 {
			return
		}
		next := slices.Clone(s.Chats)
		next[i] = mergeChatSummary(next[i], a.Changes)
		s.Chats = next
	case ahp.SessionChatsReordered:
		if next, ok := reorderChats(s.Chats, a.Chats); ok {
			s.Chats = next
		}
	case ahp.SessionDefaultChatChanged:
		s.DefaultChat = a.DefaultChat

	case ahp.SessionWorkingDirectorySet:
		s.WorkingDirectories = addURI(s.WorkingDirectories, a.Directory)
	case ahp.SessionWorkingDirectoryRemoved:
		s.WorkingDirectories = removeURI(s.WorkingDirectories, a.Directory)
	case ahp.SessionWorkingDirectoryReplaced:
		s.WorkingDirectories = replaceURI(s.WorkingDirectories, a.Directory, a.Replacement)

	case ahp.SessionActiveClientSet:
		next := slices.Clone(s.ActiveClients)
		if i := slices.IndexFunc(next, func(c ahp.ActiveClient) bool { return c.ClientID == a.ActiveClient.ClientID }); i >= 0 {
			next[i] = a.ActiveClient
		} else {
			next = append(next, a.ActiveClient)
		}
		s.ActiveClients = next
	case ahp.SessionActiveClientRemoved:
		if i := slices.IndexFunc(s.ActiveClients, func(c ahp.ActiveClient) bool { return c.ClientID == a.ClientID }); i >= 0 {
			s.ActiveClients = without(s.ActiveClients, i)
		}
	case ahp.SessionConfigChanged:
		if s.Config != nil {
			s.Config = mergeConfig(s.Config, a.Config, a.Replace)
		}
	case ahp.SessionServerToolsChanged:
		s.ServerTools = slices.Clone(a.Tools)
	case ahp.SessionChangesetsChanged:
		s.Changesets = slices.Clone(a.Changesets)

	case ahp.SessionInputNeededSet:
		next := slices.Clone(s.InputNeeded)
		if i := slices.IndexFunc(next, func(r ahp.SessionInputRequest) bool { return r.ID == a.Request.ID }); i >= 0 {
			next[i] = a.Request
		} else {
			next = append(next, a.Request)
		}
		s.InputNeeded = next
		s.Status = inputNeededStatus(s.Status, s.InputNeeded)
	case ahp.SessionInputNeededRemoved:
		i := slices.IndexFunc(s.InputNeeded, func(r ahp.SessionInputRequest) bool { return r.ID == a.ID })
		if i < 0 {
			return
		}
		s.InputNeeded = nilIfEmpty(without(s.InputNeeded, i))
		s.Status = inputNeededStatus(s.Status, s.InputNeeded)

	case ahp.SessionCustomizationsChanged:
		s.Customizations = slices.Clone(a.Customizations)
	case ahp.SessionCustomizationToggled:
		toggleCustomization(s, a)
	case ahp.SessionCustomizationUpdated:
		next := slices.Clone(s.Customizations)
		if i := slices.IndexFunc(next, func(c ahp.Customization) bool { return c.ID() == a.Customization.ID() }); i >= 0 {
			next[i] = a.Customization
		} else {
			next = append(next, a.Customization)
		}
		s.Customizations = next
	case ahp.SessionCustomizationRemoved:
		removeCustomization(s, a.ID)
	case ahp.SessionMcpServerStateChanged:
		updateMcpServer(s, a.ID, func(c ahp.Customization) ahp.Customization {
			c["state"] = a.State
			if a.Channel != "" {
				c["channel"] = a.Channel
			} else {
				delete(c, "channel")
			}
			return c
		})
	case ahp.SessionMcpServerStartRequested:
		updateMcpServer(s, a.ID, func(c ahp.Customization) ahp.Customization {
			c["state"] = map[string]any{"kind": "starting"}
			delete(c, "channel")
			return c
		})
	case ahp.SessionMcpServerStopRequested:
		updateMcpServer(s, a.ID, func(c ahp.Customization) ahp.Customization {
			c["state"] = map[string]any{"kind": "stopped"}
			delete(c, "channel")
			return c
		})
	case ahp.SessionMcpServerBackgroundRequested:
		updateMcpServer(s, a.ID, func(c ahp.Customization) ahp.Customization {
			st, _ := c["state"].(map[string]any)
			if st == nil || st["kind"] != "starting" || st["blocking"] != true {
				return nil
			}
			st = maps.Clone(st)
			st["blocking"] = false
			c["state"] = st
			return c
		})
	}
}

func chatIndex(chats []ahp.ChatSummary, chat ahp.URI) int {
	return slices.IndexFunc(chats, func(c ahp.ChatSummary) bool { return c.Resource == chat })
}

// mergeChatSummary writes the fields present in ch onto c. The identity
// (resource) never changes.
func mergeChatSummary(c ahp.ChatSummary, ch ahp.PartialChatSummary) ahp.ChatSummary {
	if ch.Title != nil {
		c.Title = *ch.Title
	}
	if ch.Status != nil {
		c.Status = *ch.Status
	}
	if ch.Activity != nil {
		c.Activity = *ch.Activity
	}
	if ch.ModifiedAt != nil {
		c.ModifiedAt = *ch.ModifiedAt
	}
	if ch.Changes != nil {
		c.Changes = ch.Changes
	}
	if ch.Origin != nil {
		c.Origin = ch.Origin
	}
	if ch.Movable != nil {
		c.Movable = *ch.Movable
	}
	if ch.Interactivity != nil {
		c.Interactivity = *ch.Interactivity
	}
	if ch.WorkingDirectories != nil {
		c.WorkingDirectories = ch.WorkingDirectories
	}
	return c
}

// reorderChats returns chats in the given order. order must name every chat
// exactly once; anything else is ignored (ok false), as is an unchanged
// order.
func reorderChats(chats []ahp.ChatSummary, order []ahp.URI) ([]ahp.ChatSummary, bool) {
	if len(order) != len(chats) {
		return nil, false
	}
	byURI := make(map[ahp.URI]int, len(chats))
	for i, c := range chats {
		byURI[c.Resource] = i
	}
	seen := make(map[ahp.URI]bool, len(order))
	next := make([]ahp.ChatSummary, 0, len(order))
	same := true
	for pos, u := range order {
		i, ok := byURI[u]
		if !ok || seen[u] {
			return nil, false
		}
		seen[u] = true
		same = same && i == pos
		next = append(next, chats[i])
	}
	if same {
		return nil, false
	}
	return next, true
}

// replaceURI replaces dir by repl in place and removes any other copy of
// repl: [A B C] with B→C gives [A C]; with C→A gives [A B].
func replaceURI(list []ahp.URI, dir, repl ahp.URI) []ahp.URI {
	i := slices.Index(list, dir)
	if i < 0 {
		return list
	}
	if j := slices.Index(list, repl); j >= 0 && j < i {
		return without(list, i)
	}
	next := make([]ahp.URI, 0, len(list))
	for k, u := range list {
		switch {
		case k == i:
			next = append(next, repl)
		case u != repl:
			next = append(next, u)
		}
	}
	return next
}

// AggregateChats derives the session's activity from its chats, by AHP's
// rule for SessionSummary.status: the activity bits come from the default
// chat (else the most recently modified one), and a chat that needs input,
// failed or runs raises the session to that, in this precedence:
// InputNeeded, Error, InProgress (so a peer chat at work shows on a session
// whose default chat is idle). The activity string follows the chat that
// decided the status. The session's own input queue still raises
// InputNeeded; IsRead and IsArchived stay the session's own. A session with
// no chat keeps what it has.
//
// It is the host's derivation, not part of Session: the protocol's session
// reducer leaves status alone on chat catalogue actions (the upstream
// fixtures say so), and the host, which owns the summary, sets the result
// and tells it in root/sessionSummaryChanged, as VS Code's host does.
func AggregateChats(s *ahp.SessionState) {
	if len(s.Chats) == 0 {
		return
	}
	driver := -1
	if s.DefaultChat != "" {
		driver = chatIndex(s.Chats, s.DefaultChat)
	}
	if driver < 0 {
		driver = 0
		for i, c := range s.Chats {
			if c.ModifiedAt > s.Chats[driver].ModifiedAt { // ISO 8601 in UTC sorts as text
				driver = i
			}
		}
	}
	for _, raise := range []ahp.SessionStatus{ahp.StatusInputNeeded, ahp.StatusError, ahp.StatusInProgress} {
		if i := slices.IndexFunc(s.Chats, func(c ahp.ChatSummary) bool { return c.Status.Has(raise) }); i >= 0 {
			if !s.Chats[driver].Status.Has(raise) {
				driver = i
			}
			break
		}
	}
	s.Status = s.Status.WithActivity(s.Chats[driver].Status & ahp.StatusActivityMask)
	s.Activity = s.Chats[driver].Activity
	if len(s.InputNeeded) > 0 {
		s.Status = inputNeededStatus(s.Status, s.InputNeeded)
	}
}

// inputNeededStatus sets the activity bits from the session's input queue:
// any entry other than toolClientExecution (work delegated to a client, not
// a prompt) means InputNeeded; once none is left the InputNeeded-only bit is
// cleared, so a running turn falls back to InProgress and an idle session
// stays idle. Flags are kept.
func inputNeededStatus(status ahp.SessionStatus, queue []ahp.SessionInputRequest) ahp.SessionStatus {
	for _, r := range queue {
		if r.Kind != ahp.InputNeededToolClientExecution {
			return status.WithActivity(ahp.StatusInputNeeded)
		}
	}
	return status &^ (ahp.StatusInputNeeded &^ ahp.StatusInProgress)
}

// children returns a container's "children" as customizations.
func children(c ahp.Customization) ([]ahp.Customization, bool) {
	raw, ok := c["children"].([]any)
	if !ok {
		return nil, false
	}
	out := make([]ahp.Customization, 0, len(raw))
	for _, x := range raw {
		m, _ := x.(map[string]any)
		out = append(out, ahp.Customization(m))
	}
	return out, true
}

func setChildren(c ahp.Customization, kids []ahp.Customization) {
	raw := make([]any, len(kids))
	for i, k := range kids {
		raw[i] = map[string]any(k)
	}
	c["children"] = raw
}

// editCustomization finds id among the top-level customizations, then among
// the children of each container, and replaces it with edit(copy). edit
// returns nil to leave it unchanged; it may also return remove to drop it.
func editCustomization(s *ahp.SessionState, id string, edit func(ahp.Customization) ahp.Customization) bool {
	for i, c := range s.Customizations {
		if c.ID() != id {
			continue
		}
		next := edit(maps.Clone(c))
		if next == nil {
			return false
		}
		list := slices.Clone(s.Customizations)
		if isRemove(next) {
			list = without(list, i)
		} else {
			list[i] = next
		}
		s.Customizations = list
		return true
	}
	for i, c := range s.Customizations {
		kids, ok := children(c)
		if !ok {
			continue
		}
		for j, k := range kids {
			if k.ID() != id {
				continue
			}
			next := edit(maps.Clone(k))
			if next == nil {
				return false
			}
			if isRemove(next) {
				kids = without(kids, j)
			} else {
				kids[j] = next
			}
			parent := maps.Clone(c)
			setChildren(parent, kids)
			list := slices.Clone(s.Customizations)
			list[i] = parent
			s.Customizations = list
			return true
		}
	}
	return false
}

// remove is the marker editCustomization's edit returns to drop an entry.
var remove = ahp.Customization{"\x00remove": true}

func isRemove(c ahp.Customization) bool { return c["\x00remove"] == true }

func removeCustomization(s *ahp.SessionState, id string) {
	editCustomization(s, id, func(ahp.Customization) ahp.Customization { return remove })
}

// toggleCustomization applies session/customizationToggled. The 0.8 form
// sets "enabled"; the 1.0 form replaces a plugin's or MCP server's
// "enablement" and sets "enabled" on other entries from the first decision.
func toggleCustomization(s *ahp.SessionState, a ahp.SessionCustomizationToggled) {
	editCustomization(s, a.ID, func(c ahp.Customization) ahp.Customization {
		if a.Enabled != nil {
			c["enabled"] = *a.Enabled
		}
		if len(a.Enablement) > 0 {
			var decisions []map[string]any
			if err := json.Unmarshal(a.Enablement, &decisions); err != nil {
				return nil
			}
			switch c.Type() {
			case "plugin", "mcpServer":
				var raw any
				_ = json.Unmarshal(a.Enablement, &raw)
				c["enablement"] = raw
			default:
				enabled := true
				if len(decisions) > 0 {
					if e, ok := decisions[0]["enabled"].(bool); ok {
						enabled = e
					}
				}
				c["enabled"] = enabled
			}
		}
		return c
	})
}

// updateMcpServer edits the MCP server customization id; other types are
// left alone.
func updateMcpServer(s *ahp.SessionState, id string, edit func(ahp.Customization) ahp.Customization) {
	editCustomization(s, id, func(c ahp.Customization) ahp.Customization {
		if c.Type() != "mcpServer" {
			return nil
		}
		return edit(c)
	})
}
