package store

import (
	"context"
	"testing"
)

// TestChangesetFiles: a turn's second change to a file keeps the first
// before and takes the new after; contents are readable only by a chat
// whose changeset points at them; review and removal stick across a
// reopen (C-TURN-19: the changeset is durable).
func TestChangesetFiles(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	v0, v1, v2 := []byte("v0\n"), []byte("v1\n"), []byte("v2\n")
	f := ChangesetFile{Chat: "c1", Turn: "t1", Path: "/w/a", ToolCall: "call1", Tool: "Write",
		BeforeExists: true, BeforeHash: ContentHash(v0), AfterExists: true, AfterHash: ContentHash(v1), Added: 1, Removed: 1}
	got, err := s.Changesets().PutFile(ctx, f, v0, v1)
	must(t, err)
	if got.Seq != 1 {
		t.Errorf("first file seq %d", got.Seq)
	}
	f2 := f
	f2.ToolCall, f2.BeforeHash, f2.AfterHash = "call2", ContentHash(v1), ContentHash(v2)
	got, err = s.Changesets().PutFile(ctx, f2, v1, v2)
	must(t, err)
	if got.BeforeHash != ContentHash(v0) || got.AfterHash != ContentHash(v2) || got.ToolCall != "call2" || got.Seq != 1 {
		t.Errorf("merged: %+v", got)
	}
	created := ChangesetFile{Chat: "c1", Turn: "t1", Path: "/w/new", ToolCall: "call3", Tool: "Write", AfterExists: true, AfterHash: ContentHash(v2), Added: 1}
	_, err = s.Changesets().PutFile(ctx, created, nil, v2)
	must(t, err)
	_, err = s.Changesets().PutFile(ctx, ChangesetFile{Chat: "c1", Turn: "t2", Path: "/w/a", ToolCall: "c4", Tool: "Edit", BeforeExists: true, AfterExists: true, Skipped: "binary"}, nil, nil)
	must(t, err)

	if data, ok, err := s.Changesets().Content(ctx, "c1", ContentHash(v0)); err != nil || !ok || string(data) != "v0\n" {
		t.Errorf("content of c1: %q %v %v", data, ok, err)
	}
	if _, ok, _ := s.Changesets().Content(ctx, "other", ContentHash(v0)); ok {
		t.Error("another chat read c1's content")
	}
	must(t, s.Changesets().SetReviewed(ctx, "c1", "t1", []string{"/w/new"}, true))
	must(t, s.Changesets().RemoveFiles(ctx, "c1", "t1", []string{"/w/a"}))
	must(t, s.Close())

	s2, _ := openAt(t, path)
	files, err := s2.Changesets().Files(ctx, "c1", "t1")
	must(t, err)
	if len(files) != 1 || files[0].Path != "/w/new" || !files[0].Reviewed || files[0].BeforeExists || files[0].Seq != 2 {
		t.Fatalf("t1 after reopen: %+v", files)
	}
	all, err := s2.Changesets().Files(ctx, "c1", "")
	must(t, err)
	if len(all) != 2 || all[1].Turn != "t2" || all[1].Skipped != "binary" {
		t.Fatalf("every turn: %+v", all)
	}
}
