package auth

import "testing"

func TestPrincipalCan(t *testing.T) {
	alice := Principal{Sender: "user:alice", Grants: []string{"chat:turns", "chat:draft"}}
	cases := []struct {
		name  string
		p     Principal
		grant string
		want  bool
	}{
		{"root holds every grant", Root("h"), ChatSend, true},
		{"exact grant", alice, ChatDraft, true},
		{"missing grant refused (C-GRANT-08)", alice, ChatSend, false},
		{"subject wildcard", Principal{Grants: []string{"chat:*"}}, ChatTruncate, true},
		{"chat:read is chat:turns (C-GRANT-01)", Principal{Grants: []string{"chat:read"}}, ChatTurns, true},
		{"chat:read does not send", Principal{Grants: []string{"chat:read"}}, ChatSend, false},
		{"session group covers chat writes (C-GRANT-05)", Principal{Grants: []string{"session:write"}}, ChatSend, true},
		{"session read covers chat reading (C-GRANT-05)", Principal{Grants: []string{"session:read"}}, ChatTurns, true},
		{"session read does not cover writes", Principal{Grants: []string{"session:read"}}, ChatCancel, false},
		{"session wildcard covers chat", Principal{Grants: []string{"session:*"}}, ChatMark, true},
		{"no grants", Principal{}, ChatTurns, false},
		{"root reads the host's logs", Root("h"), HostLogs, true},
		{"host wildcard reads the host's logs", Principal{Grants: []string{"host:*"}}, HostLogs, true},
		{"diagnostics do not read the logs", Principal{Grants: []string{HostDiagnose}}, HostLogs, false},
		{"no session group reads the logs", Principal{Grants: []string{"session:read", "session:write"}}, HostLogs, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.Can(c.grant); got != c.want {
				t.Fatalf("Can(%q) = %v, want %v", c.grant, got, c.want)
			}
		})
	}
}

func TestRootSender(t *testing.T) {
	// C-TURN-06: a turn the deployment's own token started names root:<host>.
	if got := Root("box").Sender; got != "root:box" {
		t.Fatalf("Root sender = %q", got)
	}
}

func TestHostLogsKnown(t *testing.T) {
	// A config may grant host:logs and resource:clients; no group holds
	// either.
	for _, grant := range []string{HostLogs, ResourceClients} {
		if !Known(grant) {
			t.Fatalf("Known(%q) = false", grant)
		}
		for g, members := range groups {
			for _, m := range members {
				if m == grant {
					t.Fatalf("group %s holds %s", g, grant)
				}
			}
		}
	}
	if !(Principal{Grants: []string{"resource:*"}}).Can(ResourceClients) || (Principal{Grants: []string{"session:*", "chat:*"}}).Can(ResourceClients) {
		t.Fatal("resource:clients is held by resource:* only")
	}
}
