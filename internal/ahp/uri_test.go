package ahp

import "testing"

func TestChatURIs(t *testing.T) {
	const sess = "copilotcli:/0b1c2d3e-0000-4000-8000-000000000001"
	def := DefaultChatURI(sess)
	cases := []struct {
		name    string
		uri     string
		kind    ChatURIKind
		id      string
		session string
		tool    string
	}{
		// C-FIRST-01: the URI an older VS Code window computes.
		{"derived default", def, ChatURIDefault, "", sess, ""},
		// C-FIRST-16: an opaque chat names no session.
		{"opaque", "ahp-chat:/" + "0b1c2d3e-0000-4000-8000-000000000001", ChatURIOpaque, "0b1c2d3e-0000-4000-8000-000000000001", "", ""},
		{"peer chat VS Code made", DerivedChatURI(sess, "c2"), ChatURIDerived, "c2", sess, ""},
		{"subagent", SubagentChatURI(sess, "toolu_01/x"), ChatURISubagent, "", sess, "toolu_01/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseChatURI(c.uri)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != c.kind || p.ID != c.id || p.Session != c.session || p.ToolCallID != c.tool {
				t.Fatalf("ParseChatURI(%q) = %+v", c.uri, p)
			}
		})
	}
	if def != "ahp-chat://default/Y29waWxvdGNsaTovMGIxYzJkM2UtMDAwMC00MDAwLTgwMDAtMDAwMDAwMDAwMDAx" {
		t.Fatalf("default chat URI = %s (base64url, unpadded)", def)
	}
	for _, bad := range []string{"ahp-chat:", "ahp-chat://default/!!!", "ahp-session:/x", "ahp-chat://default/" + "eA"} {
		if _, err := ParseChatURI(bad); err == nil {
			t.Errorf("ParseChatURI(%q) accepted", bad)
		}
	}
}

// TestMintChatURI: a chat the host opens is minted in the format of the
// session's default chat (C-FIRST-04; reading 3 in docs/CHATS.md).
func TestMintChatURI(t *testing.T) {
	const sess = "claude:/5e5e5e5e-0000-4000-8000-000000000001"
	if got := MintChatURI(sess, DefaultChatURI(sess), "w1"); got != DerivedChatURI(sess, "w1") {
		t.Fatalf("derived session: %s", got)
	}
	if got := MintChatURI("ahp-session:/s1", "ahp-chat:/abc", "w1"); got != "ahp-chat:/w1" {
		t.Fatalf("opaque session: %s", got)
	}
}

func TestSessionID(t *testing.T) {
	for uri, want := range map[string]string{
		"ahp-session:/abc": "abc",
		"copilotcli:/abc":  "abc",
		"claude://abc":     "abc",
		"ahp-chat:/abc":    "",
		"ahp-root://":      "",
		"noscheme":         "",
		"ahp-session:/a/b": "",
		"ahp-terminal:/x":  "",
	} {
		got, ok := SessionID(uri)
		if got != want || ok != (want != "") {
			t.Errorf("SessionID(%q) = %q, %v; want %q", uri, got, ok, want)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{"file:///tmp/x": "/tmp/x", "/tmp/y/": "/tmp/y", "file://localhost/z": "/z"} {
		got, err := LocalPath(in)
		if err != nil || got != want {
			t.Errorf("LocalPath(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"relative/p", "http://x/y", "file://other/z"} {
		if _, err := LocalPath(bad); err == nil {
			t.Errorf("LocalPath(%q) accepted", bad)
		}
	}
	if FileURI("/a b") != "file:///a%20b" {
		t.Errorf("FileURI = %s", FileURI("/a b"))
	}
}
