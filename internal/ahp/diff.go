package ahp

import (
	"reflect"
	"slices"
)

// changed sets *dst to &b and reports true when a and b differ.
func changed[T comparable](dst **T, a, b T) bool {
	if a == b {
		return false
	}
	*dst = &b
	return true
}

// DiffSessionSummary returns the fields of b that differ from a, for
// root/sessionSummaryChanged, and whether any does.
func DiffSessionSummary(a, b SessionSummary) (PartialSessionSummary, bool) {
	var p PartialSessionSummary
	any := changed(&p.Title, a.Title, b.Title)
	any = changed(&p.Status, a.Status, b.Status) || any
	any = changed(&p.Activity, a.Activity, b.Activity) || any
	any = changed(&p.ModifiedAt, a.ModifiedAt, b.ModifiedAt) || any
	any = changed(&p.DefaultChat, a.DefaultChat, b.DefaultChat) || any
	if !reflect.DeepEqual(a.Chats, b.Chats) {
		p.Chats, any = b.Chats, true
	}
	if !slices.Equal(a.WorkingDirectories, b.WorkingDirectories) {
		p.WorkingDirectories, any = b.WorkingDirectories, true
	}
	if b.Changes != nil && !reflect.DeepEqual(a.Changes, b.Changes) {
		p.Changes, any = b.Changes, true
	}
	return p, any
}

// DiffChatSummary returns the fields of b that differ from a, for
// session/chatUpdated, or nil when none does. The origin, when b has one,
// is always sent whole (C-FROM-18): a change never reads as a chat that
// forgot where it came from.
func DiffChatSummary(a, b ChatSummary) *PartialChatSummary {
	var p PartialChatSummary
	any := changed(&p.Title, a.Title, b.Title)
	any = changed(&p.Status, a.Status, b.Status) || any
	any = changed(&p.Activity, a.Activity, b.Activity) || any
	any = changed(&p.ModifiedAt, a.ModifiedAt, b.ModifiedAt) || any
	any = changed(&p.Interactivity, a.Interactivity, b.Interactivity) || any
	if !slices.Equal(a.WorkingDirectories, b.WorkingDirectories) {
		p.WorkingDirectories, any = b.WorkingDirectories, true
	}
	if !reflect.DeepEqual(a.Origin, b.Origin) {
		any = true
	}
	if !any {
		return nil
	}
	p.Origin = b.Origin
	return &p
}
