package localendpoint

import (
	"encoding/json"
	"strings"
	"testing"
)

// The file name is the hex SHA-256 of "type\0pid\0instanceId": the same
// bytes VS Code's editor and CLI hash, pinned here by digests computed
// outside Go (Python: hashlib.sha256(b'standalone\x00123\x00abc')).
func TestEntryFileNameIsTheUpstreamIdentityHash(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		pid  int
		id   string
		want string
	}{
		{TypeStandalone, 123, "abc", "537e0427f1e3cff19674af80b74599265ee20d64ebff97a89e4ce8dcea9568d4.json"},
		{TypeEditor, 100, "a", "7d85ced9c07d7fd6a7d267ce316118876826c5734ff988a595ecf8efe8543e25.json"},
	} {
		e := Entry{Type: tc.typ, PID: tc.pid, InstanceID: tc.id}
		if got := e.FileName(); got != tc.want {
			t.Errorf("%s/%d/%s: file name %s, want %s", tc.typ, tc.pid, tc.id, got, tc.want)
		}
	}
}

// ahpd's entry has exactly the upstream schema's keys and shapes.
func TestNewStandaloneEntryShape(t *testing.T) {
	e := NewStandalone(4242, 9187, "1.0.0", "tok")
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"schemaVersion": float64(2), "type": "standalone", "pid": float64(4242),
		"instanceId": e.InstanceID, "protocolVersion": "1.0.0", "connectionToken": "tok",
		"endpoint": map[string]any{"type": "tcp", "host": "127.0.0.1", "port": float64(9187)},
	}
	if len(got) != len(want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	for k, v := range want {
		if gb, _ := json.Marshal(got[k]); string(gb) != mustJSON(t, v) {
			t.Errorf("%s = %s, want %s", k, gb, mustJSON(t, v))
		}
	}
	if len(e.InstanceID) != 22 || strings.ContainsAny(e.InstanceID, "+/=") {
		t.Errorf("instance id %q is not 16 bytes of unpadded base64url", e.InstanceID)
	}
	if NewStandalone(1, 1, "1.0.0", "").InstanceID == e.InstanceID {
		t.Error("two entries got the same instance id")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Parse drops what VS Code's readers drop.
func TestParseRules(t *testing.T) {
	const tcp = `"endpoint":{"type":"tcp","host":"127.0.0.1","port":9187}`
	for _, tc := range []struct {
		name string
		json string
		ok   bool
	}{
		{"standalone tcp", `{"schemaVersion":2,"type":"standalone","pid":7,"instanceId":"i","protocolVersion":"1.0.0","connectionToken":"",` + tcp + `}`, true},
		{"editor socket", `{"schemaVersion":2,"type":"editor","pid":7,"instanceId":"i","protocolVersion":"0.8.0","connectionToken":"t","endpoint":{"type":"socket","path":"/tmp/a.sock"}}`, true},
		{"schema 1 is ignored", `{"schemaVersion":1,"type":"standalone","pid":7,"instanceId":"i",` + tcp + `}`, false},
		{"schema 3 is ignored", `{"schemaVersion":3,"type":"standalone","pid":7,"instanceId":"i",` + tcp + `}`, false},
		{"unknown type", `{"schemaVersion":2,"type":"daemon","pid":7,"instanceId":"i",` + tcp + `}`, false},
		{"pid zero", `{"schemaVersion":2,"type":"standalone","pid":0,"instanceId":"i",` + tcp + `}`, false},
		{"negative pid", `{"schemaVersion":2,"type":"standalone","pid":-3,"instanceId":"i",` + tcp + `}`, false},
		{"no instance id", `{"schemaVersion":2,"type":"standalone","pid":7,` + tcp + `}`, false},
		{"port out of range", `{"schemaVersion":2,"type":"standalone","pid":7,"instanceId":"i","endpoint":{"type":"tcp","host":"127.0.0.1","port":70000}}`, false},
		{"socket without path", `{"schemaVersion":2,"type":"editor","pid":7,"instanceId":"i","endpoint":{"type":"socket"}}`, false},
		{"unknown endpoint", `{"schemaVersion":2,"type":"editor","pid":7,"instanceId":"i","endpoint":{"type":"pipe","path":"x"}}`, false},
		{"not json", `{ this is not json`, false},
		{"an array", `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := Parse([]byte(tc.json)); ok != tc.ok {
				t.Errorf("Parse ok = %v, want %v", ok, tc.ok)
			}
		})
	}
}

// A start prunes only what ahpd itself could have written.
func TestPrunableOnlyStandaloneLoopbackUnderItsName(t *testing.T) {
	own := NewStandalone(7, 9187, "1.0.0", "")
	editor := Entry{SchemaVersion: 2, Type: TypeEditor, PID: 7, InstanceID: "e", Endpoint: Endpoint{Type: EndpointSocket, Path: "/tmp/s"}}
	lan := own
	lan.Endpoint.Host = "192.168.1.5"
	for _, tc := range []struct {
		name string
		e    Entry
		file string
		want bool
	}{
		{"ahpd's own kind", own, own.FileName(), true},
		{"an editor's entry", editor, editor.FileName(), false},
		{"a standalone entry not on 127.0.0.1", lan, lan.FileName(), false},
		{"under another name", own, "copy.json", false},
	} {
		if got := Prunable(tc.e, tc.file); got != tc.want {
			t.Errorf("%s: Prunable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Only a listener that accepts on 127.0.0.1 is published.
func TestPublishPortNeedsLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		port int
		ok   bool
	}{
		{"127.0.0.1:9187", 9187, true},
		{"0.0.0.0:4000", 4000, true},
		{"[::]:4000", 4000, true},
		{"[::1]:4000", 0, false},
		{"127.0.0.2:4000", 0, false},
		{"192.168.1.5:9187", 0, false},
		{"localhost:9187", 0, false},
		{"127.0.0.1:0", 0, false},
		{"127.0.0.1", 0, false},
	} {
		port, err := PublishPort(tc.addr)
		if (err == nil) != tc.ok || port != tc.port {
			t.Errorf("PublishPort(%q) = %d, %v; want %d, ok %v", tc.addr, port, err, tc.port, tc.ok)
		}
	}
}
