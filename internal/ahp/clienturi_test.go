package ahp

import "testing"

func TestParseClientURI(t *testing.T) {
	cases := []struct {
		name, uri, client, want string
	}{
		{"a file: URI as VS Code wraps it", "vscode-agent-client://client-1/file/-/Users/u/notes.txt", "client-1", "file:///Users/u/notes.txt"},
		{"escapes are kept for the client", "vscode-agent-client://c/file/-/tmp/a%20b/c%3A.txt", "c", "file:///tmp/a%20b/c%3A.txt"},
		{"an authority of the client URI", "vscode-agent-client://c/vscode-remote/ssh-remote%2Bbox/home/u", "c", "vscode-remote://ssh-remote%2Bbox/home/u"},
		{"an escaped clientId", "vscode-agent-client://client%20one/file/-/x", "client one", "file:///x"},
		{"no path under the authority", "vscode-agent-client://c/file/-", "c", "file:///"},
		{"an opaque client URI", "vscode-agent-client://c/untitled!/-/Untitled-1", "c", "untitled:Untitled-1"},
		{"query and fragment carried", "vscode-agent-client://c/file/-/x?q=1#f", "c", "file:///x?q=1#f"},
		{"the scheme in any case", "VSCode-Agent-Client://c/FILE/-/x", "c", "file:///x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseClientURI(c.uri)
			if err != nil {
				t.Fatal(err)
			}
			if f.ClientID != c.client || f.URI != c.want {
				t.Fatalf("ParseClientURI(%q) = %+v, want client %q, URI %q", c.uri, f, c.client, c.want)
			}
		})
	}
}

func TestParseClientURIRefuses(t *testing.T) {
	for name, uri := range map[string]string{
		"another scheme":           "file:///x",
		"no client":                "vscode-agent-client:///file/-/x",
		"no file":                  "vscode-agent-client://c",
		"no scheme segment":        "vscode-agent-client://c/",
		"a scheme that is not one": "vscode-agent-client://c/1bad/-/x",
		"a dot-dot segment":        "vscode-agent-client://c/file/-/tmp/../etc/passwd",
		"an escaped dot-dot":       "vscode-agent-client://c/file/-/tmp/%2e%2E/etc/passwd",
		"a dot segment":            "vscode-agent-client://c/file/-/tmp/./x",
		"a NUL":                    "vscode-agent-client://c/file/-/tmp/x%00y",
		"a malformed escape":       "vscode-agent-client://c/file/-/tmp/%zz",
		"a malformed clientId":     "vscode-agent-client://%zz/file/-/x",
	} {
		if f, err := ParseClientURI(uri); err == nil {
			t.Errorf("%s: ParseClientURI(%q) = %+v, want a refusal", name, uri, f)
		}
	}
}

func TestClientURIRoundTrips(t *testing.T) {
	for _, uri := range []string{"file:///Users/u/notes.txt", "file:///tmp/a%20b", "vscode-remote://ssh-remote%2Bbox/home/u", "untitled:Untitled-1", "file:///x?q=1#f", "file://server/share/x"} {
		wrapped, ok := ClientURI("client-1", uri)
		if !ok {
			t.Fatalf("ClientURI(%q) refused", uri)
		}
		f, err := ParseClientURI(wrapped)
		if err != nil || f.ClientID != "client-1" || f.URI != uri {
			t.Fatalf("%q wrapped %q, parsed back %+v (%v)", uri, wrapped, f, err)
		}
	}
	if got, _ := ClientURI("client-1", "file:///Users/u/my-plugin"); got != "vscode-agent-client://client-1/file/-/Users/u/my-plugin" {
		t.Fatalf("ClientURI = %s, want VS Code's spelling", got)
	}
	if _, ok := ClientURI("c", "not a uri"); ok {
		t.Fatal("ClientURI wrapped a string with no scheme")
	}
}
