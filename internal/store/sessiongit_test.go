package store

import (
	"context"
	"testing"
	"time"
)

// TestSessionGitRecords: a git session's record, its turns' snapshots and
// its review marks survive a reopen; a disposed session's kept worktree
// stays listed with why, without its turns and marks; delete forgets all.
func TestSessionGitRecords(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	at := time.UnixMilli(1_700_000_000_000)
	wt := SessionGit{Session: "s:/1", Dir: "/w/wt/1", SourceRepo: "/w/repo", Worktree: "/w/wt/1", WorktreeRoot: "/w/wt",
		Branch: "ahpd/1", Base: "b1", Start: "b1", CreatedAt: at}
	plain := SessionGit{Session: "s:/2", Dir: "/w/repo", Base: "b1", Start: "snap", CreatedAt: at.Add(time.Second)}
	must(t, s.Git().Put(ctx, wt))
	must(t, s.Git().Put(ctx, plain))
	if err := s.Git().Put(ctx, SessionGit{Session: "s:/3"}); err == nil {
		t.Error("a record without its directory was stored")
	}
	must(t, s.Git().PutTurnStart(ctx, "s:/1", "chat", "t1", "a"))
	must(t, s.Git().PutTurnEnd(ctx, "s:/1", "t1", "b"))
	must(t, s.Git().SetReviewed(ctx, "s:/1", []string{"file:///w/wt/1/x", "file:///w/wt/1/y"}, true))
	must(t, s.Git().SetReviewed(ctx, "s:/1", []string{"file:///w/wt/1/y"}, false))
	s.Close()

	s, _ = openAt(t, path)
	got, ok, err := s.Git().Get(ctx, "s:/1")
	if err != nil || !ok || got != wt {
		t.Fatalf("after reopen: %+v %v %v, want %+v", got, ok, err, wt)
	}
	if turn, ok, _ := s.Git().Turn(ctx, "s:/1", "t1"); !ok || turn != (TurnSnapshot{Turn: "t1", Chat: "chat", Start: "a", End: "b"}) {
		t.Errorf("turn t1: %+v %v", turn, ok)
	}
	if _, ok, _ := s.Git().Turn(ctx, "s:/1", "t2"); ok {
		t.Error("a turn never snapshotted has snapshots")
	}
	if has, _ := s.Git().HasTurns(ctx, "s:/1"); !has {
		t.Error("HasTurns false after a turn")
	}
	if has, _ := s.Git().HasTurns(ctx, "s:/2"); has {
		t.Error("HasTurns true before any turn")
	}
	if r, _ := s.Git().Reviewed(ctx, "s:/1"); len(r) != 1 || !r["file:///w/wt/1/x"] {
		t.Errorf("review marks %v", r)
	}
	list, err := s.Git().Worktrees(ctx)
	must(t, err)
	if len(list) != 1 || list[0].Session != "s:/1" {
		t.Fatalf("worktrees %+v: only a session in a worktree of its own is listed", list)
	}

	must(t, s.Git().Disposed(ctx, "s:/1", "dirty", at.Add(time.Hour)))
	list, _ = s.Git().Worktrees(ctx)
	if len(list) != 1 || list[0].Kept != "dirty" || !list[0].DisposedAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("kept worktree %+v", list)
	}
	if has, _ := s.Git().HasTurns(ctx, "s:/1"); has {
		t.Error("a disposed session kept its turns' snapshots")
	}
	if r, _ := s.Git().Reviewed(ctx, "s:/1"); len(r) != 0 {
		t.Errorf("a disposed session kept its review marks %v", r)
	}
	must(t, s.Git().Delete(ctx, "s:/1"))
	if _, ok, _ := s.Git().Get(ctx, "s:/1"); ok {
		t.Error("a deleted record is still there")
	}
}
