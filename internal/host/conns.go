package host

import (
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/lockorder"
	"github.com/ahpd/ahpd/internal/rpc"
)

// conns are the host's connections: the client record of each rpc.Conn,
// with the principal its token names.
type conns struct {
	hostName   string
	rootToken  string
	principals map[string]auth.Principal

	// mu (rank lockorder.HostConns) guards m; no other lock is taken
	// inside it.
	mu lockorder.Mutex
	m  map[*rpc.Conn]*client
	// known are the client ids that said who they are here (initialize)
	// since the host started, the oldest forgotten past knownClients:
	// only those can resume with reconnect. Guarded by mu.
	known      map[string]string // client id → the version it initialized with
	knownOrder []string
}

// knownClients bounds how many client ids the host remembers for
// reconnect; one forgotten initializes again, as after a restart.
const knownClients = 1 << 16

func newConns(hostName, rootToken string, principals map[string]auth.Principal) *conns {
	return &conns{hostName: hostName, rootToken: rootToken, principals: principals,
		mu: lockorder.Mutex{Rank: lockorder.HostConns}, m: make(map[*rpc.Conn]*client), known: make(map[string]string)}
}

// connected registers a new connection. Its principal comes from the token
// it presented: none (loopback) or the root token is the deployment
// itself.
func (cs *conns) connected(c *rpc.Conn) {
	p := auth.Root(cs.hostName)
	if tok := c.Token(); tok != "" && tok != cs.rootToken {
		if q, ok := cs.principals[tok]; ok {
			p = q
		}
	}
	cs.mu.Lock()
	cs.m[c] = newClient(c, p)
	cs.mu.Unlock()
}

// disconnected forgets a connection and returns its client (nil when the
// host never saw it).
func (cs *conns) disconnected(c *rpc.Conn) *client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cl := cs.m[c]
	delete(cs.m, c)
	return cl
}

// client is the record of connection c.
func (cs *conns) client(c *rpc.Conn) *client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cl := cs.m[c]
	if cl == nil {
		// A connection the host never saw connect: serve it as root over
		// loopback rather than fail.
		cl = newClient(c, auth.Root(cs.hostName))
		cs.m[c] = cl
	}
	return cl
}

// remember notes that client id initialized here at version.
func (cs *conns) remember(id, version string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.known[id]; ok {
		cs.known[id] = version
		return
	}
	if len(cs.knownOrder) >= knownClients {
		delete(cs.known, cs.knownOrder[0])
		cs.knownOrder[0] = ""
		cs.knownOrder = cs.knownOrder[1:]
	}
	cs.known[id] = version
	cs.knownOrder = append(cs.knownOrder, id)
}

// knows reports whether client id initialized here (and is not
// forgotten), and the version it initialized with.
func (cs *conns) knows(id string) (version string, ok bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	version, ok = cs.known[id]
	return version, ok
}
