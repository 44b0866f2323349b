package host

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/ahpd/ahpd/internal/ahp"
	"github.com/ahpd/ahpd/internal/auth"
	"github.com/ahpd/ahpd/internal/chat"
	"github.com/ahpd/ahpd/internal/rpc"
)

// client is the host's record of one connection. It is the bus's
// subscriber for that connection.
type client struct {
	conn      *rpc.Conn
	principal auth.Principal

	// mu guards id, version and initialized: they are set by initialize or
	// reconnect on the connection's read loop and read by publishers.
	mu          sync.Mutex
	id          string
	version     string
	initialized bool
}

// Deliver queues a notification on the connection; it never blocks.
func (c *client) Deliver(method string, params json.RawMessage) {
	_ = c.conn.NotifyRaw(method, params)
}

// Knows reports whether the connection's version knows the action type.
func (c *client) Knows(actionType string) bool {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	return v == "" || ahp.ActionKnownTo(actionType, v)
}

// ClientID is the clientId the connection gave.
func (c *client) ClientID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

func (c *client) setIdentity(id, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.version, c.initialized = id, version, true
}

func (c *client) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized
}

func (c *client) negotiated() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// chatClient is who the connection is to a chat or session actor.
func (c *client) chatClient() chat.Client {
	return chat.Client{Sub: c, ID: c.ClientID(), Sender: c.principal.Sender, Can: c.principal.Can,
		Root: strings.HasPrefix(c.principal.Sender, "root:")}
}
