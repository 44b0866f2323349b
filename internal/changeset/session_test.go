package changeset

import "testing"

func TestParseSessionChannel(t *testing.T) {
	const s = "ahp-session:/abc"
	for _, tc := range []struct {
		uri  string
		want SessionChannel
		ok   bool
	}{
		{s + "/changeset/uncommitted", SessionChannel{Session: s, Kind: KindUncommitted}, true},
		{s + "/changeset/branch", SessionChannel{Session: s, Kind: KindBranch}, true},
		{s + "/changeset/session", SessionChannel{Session: s, Kind: KindSession}, true},
		{s + "/changeset/turn/t1", SessionChannel{Session: s, Kind: KindTurn, Turn: "t1"}, true},
		{s + "/changeset/compare/a/b", SessionChannel{Session: s, Kind: KindCompare, Original: "a", Modified: "b"}, true},
		{"copilot:/u-1/changeset/turn/x", SessionChannel{Session: "copilot:/u-1", Kind: KindTurn, Turn: "x"}, true},
		{s + "/changeset/turn/{turnId}", SessionChannel{}, false},
		{s + "/changeset/turn/", SessionChannel{}, false},
		{s + "/changeset/turn/a/b", SessionChannel{}, false},
		{s + "/changeset/compare/a", SessionChannel{}, false},
		{s + "/changeset/compare/{originalTurnId}/{modifiedTurnId}", SessionChannel{}, false},
		{s + "/changeset/agent-merge", SessionChannel{}, false},
		{s + "/changeset/", SessionChannel{}, false},
		{"/changeset/branch", SessionChannel{}, false},
		{ChatURI("ahp-chat:/x"), SessionChannel{}, false},
	} {
		got, ok := ParseSessionChannel(tc.uri)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.uri, got, ok, tc.want, tc.ok)
		}
	}
	for _, uri := range []string{SessionURI(s, KindBranch), SessionTurnURI(s, "t"), SessionCompareURI(s, "a", "b")} {
		if !IsSessionChannel(uri) {
			t.Errorf("%s does not parse back", uri)
		}
	}
}

func TestGitContentURI(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef01234567"
	s, got, ok := ParseGitContent(GitContentURI("ahp-session:/x", id))
	if !ok || s != "ahp-session:/x" || got != id {
		t.Fatalf("round trip: %q %q %v", s, got, ok)
	}
	for _, bad := range []string{
		GitContentScheme + ":/" + "!!/" + id,
		GitContentURI("ahp-session:/x", "HEAD"),
		GitContentURI("ahp-session:/x", "../../etc"),
		GitContentURI("ahp-session:/x", id[:39]),
		GitContentURI("", id),
	} {
		if _, _, ok := ParseGitContent(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
}
