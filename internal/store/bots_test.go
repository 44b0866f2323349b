package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// A bot reads back as stored, lists by slug, and once deleted leaves its
// slug taken for good, across a reopen.
func TestBotsRoundTripAndTombstone(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	a := BotRecord{Slug: "alpha", Name: "Alpha", Instructions: "do a", Agent: "script", Model: "m1", Folder: "/tmp/a", Owner: "user:alice", CreatedAt: at(1)}
	b := BotRecord{Slug: "beta", Name: "Beta", Agent: "claude", Folder: "/tmp/b", Owner: "root:h", Session: "ahp-session:/s", Linked: true, CreatedAt: at(2)}
	must(t, s.Bots().Add(ctx, b))
	must(t, s.Bots().Add(ctx, a))
	if err := s.Bots().Add(ctx, a); !errors.Is(err, ErrSlugTaken) {
		t.Fatalf("second add of a live slug: %v", err)
	}
	must(t, s.Bots().SetSession(ctx, "alpha", "ahp-session:/work", false))
	a.Session = "ahp-session:/work"
	got, ok, err := s.Bots().Get(ctx, "alpha")
	if err != nil || !ok || !reflect.DeepEqual(got, a) {
		t.Fatalf("Bots.Get(alpha) = %+v %v %v, want %+v", got, ok, err, a)
	}
	list, err := s.Bots().List(ctx)
	if err != nil || len(list) != 2 || list[0].Slug != "alpha" || list[1].Slug != "beta" || !list[1].Linked {
		t.Fatalf("Bots.List = %+v, %v", list, err)
	}
	if gone, err := s.Bots().Delete(ctx, "alpha"); err != nil || !gone {
		t.Fatalf("Bots.Delete = %v %v", gone, err)
	}
	if gone, err := s.Bots().Delete(ctx, "alpha"); err != nil || gone {
		t.Fatalf("second Bots.Delete = %v %v, want nothing deleted", gone, err)
	}
	if _, ok, _ := s.Bots().Get(ctx, "alpha"); ok {
		t.Fatal("a deleted bot still reads")
	}
	s.Close()
	s, _ = openAt(t, path)
	if err := s.Bots().Add(ctx, BotRecord{Slug: "alpha", Name: "Again", CreatedAt: at(3)}); !errors.Is(err, ErrSlugTaken) {
		t.Fatalf("re-adding a deleted slug after a reopen: %v", err)
	}
	if list, _ := s.Bots().List(ctx); len(list) != 1 || list[0].Slug != "beta" {
		t.Fatalf("Bots.List after delete = %+v", list)
	}
}
