package natstest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// GlobalAccount is the account of clients that connect without credentials,
// the account to pass to Cluster.StreamLeader for such clients' streams.
const GlobalAccount = "$G"

// clusterMaxPayload lets the cluster carry memindex's largest event (1 MiB)
// plus headers, as the embedded server and the deployment configs do.
const clusterMaxPayload = 2 << 20

// Cluster is an in-process JetStream cluster on loopback: every node has
// its own store directory under the test's temporary directory and keeps
// its client and cluster ports across Stop and Restart, so clients connected
// with URLs reconnect to a restarted node.
type Cluster struct {
	tb    testing.TB
	name  string
	mu    sync.Mutex
	nodes []*clusterNode
}

type clusterNode struct {
	name        string
	dir         string
	clientPort  int // -1 until the first start picks one
	clusterPort int
	srv         *server.Server // nil while stopped
}

// NewCluster starts an n-node JetStream cluster (n ≥ 1; 3 for R3 streams)
// on loopback with random ports, waits until it has a JetStream meta leader,
// and shuts every node down when the test ends.
func NewCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("natstest.NewCluster: n = %d, want at least 1", n)
	}
	c := &Cluster{tb: tb, name: "memindex-test"}
	for i := range n {
		c.nodes = append(c.nodes, &clusterNode{name: "n" + strconv.Itoa(i+1), dir: tb.TempDir(), clientPort: -1})
	}
	tb.Cleanup(func() {
		for i := range c.nodes {
			c.Stop(i)
		}
	})
	// Cluster ports are picked free before any node starts (each routes to
	// all), so another process may take one in between: then every node is
	// stopped and the cluster starts again on fresh ports.
	var errs []error
	for attempt := 0; attempt < 3; attempt++ {
		for _, nd := range c.nodes {
			nd.clusterPort, nd.clientPort = freePort(tb), -1
		}
		var wg sync.WaitGroup
		errs = make([]error, n)
		for i := range c.nodes {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = c.start(i) }()
		}
		wg.Wait()
		if errors.Join(errs...) == nil {
			break
		}
		tb.Logf("natstest: start the cluster again on fresh ports: %v", errors.Join(errs...))
		for i := range c.nodes {
			c.Stop(i)
		}
	}
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	c.WaitForMetaLeader(tb, 30*time.Second)
	return c
}

// Size is the number of nodes, running or stopped.
func (c *Cluster) Size() int { return len(c.nodes) }

// Server returns node i's server, nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].srv
}

// Name returns node i's server name (n1, n2, ...).
func (c *Cluster) Name(i int) string { return c.nodes[i].name }

// Index returns the index of the node named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, nd := range c.nodes {
		if nd.name == name {
			return i
		}
	}
	return -1
}

// ClientURL returns node i's client URL; it stays the same across restarts.
func (c *Cluster) ClientURL(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.nodes[i].clientPort))
}

// URLs returns every node's client URL, comma-separated, as --server and
// nats.Connect take them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.nodes))
	for i := range c.nodes {
		urls[i] = c.ClientURL(i)
	}
	return strings.Join(urls, ",")
}

// Connect connects to the cluster (any node) with unlimited reconnects, so
// the connection survives a node being stopped, and closes it when the test
// ends.
func (c *Cluster) Connect(tb testing.TB, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(c.URLs(), opts...)
	if err != nil {
		tb.Fatalf("connect to cluster %s: %v", c.URLs(), err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Stop shuts node i down and waits until it is down; its store stays for a
// Restart. Stopping a stopped node does nothing.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.nodes[i].srv
	c.nodes[i].srv = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts stopped node i again on the same ports and store
// directory and waits until it accepts connections (not until its streams
// are current: poll StreamCurrent for that).
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	if c.Server(i) != nil {
		c.tb.Fatalf("natstest: restart node %s: it is running", c.nodes[i].name)
	}
	if err := c.start(i); err != nil {
		c.tb.Fatal(err)
	}
}

// start starts node i with routes to every node (itself included, as
// cluster configs usually list them), which a JetStream cluster needs to
// know its expected size.
func (c *Cluster) start(i int) error {
	nd := c.nodes[i]
	var routes []*url.URL
	for _, o := range c.nodes {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(o.clusterPort))})
	}
	c.mu.Lock()
	port := nd.clientPort
	c.mu.Unlock()
	opts := &server.Options{
		ServerName: nd.name,
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   nd.dir,
		MaxPayload: clusterMaxPayload,
		Cluster: server.ClusterOpts{
			Name: c.name,
			Host: "127.0.0.1",
			Port: nd.clusterPort,
		},
		Routes: routes,
		NoLog:  true,
		NoSigs: true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("natstest: new cluster node %s: %w", nd.name, err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("natstest: cluster node %s not ready for connections within 30s (cluster port %d in use?)", nd.name, nd.clusterPort)
	}
	c.mu.Lock()
	nd.srv = s
	nd.clientPort = s.Addr().(*net.TCPAddr).Port
	c.mu.Unlock()
	return nil
}

// MetaLeader returns the index of the node that leads the JetStream meta
// group, or -1 when no running node does.
func (c *Cluster) MetaLeader() int {
	for i := range c.nodes {
		if s := c.Server(i); s != nil && s.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// WaitForMetaLeader polls until the cluster has a JetStream meta leader
// that knows every node as a peer (a leader elected before the last node
// reported in cannot place an R3 stream yet) and every running node knows
// the meta group is current, and returns the leader's index.
func (c *Cluster) WaitForMetaLeader(tb testing.TB, timeout time.Duration) int {
	tb.Helper()
	var leader int
	c.poll(tb, timeout, "a JetStream meta leader that knows every node", func() bool {
		if leader = c.MetaLeader(); leader < 0 {
			return false
		}
		s := c.Server(leader)
		if s == nil || len(s.JetStreamClusterPeers()) < len(c.nodes) {
			return false
		}
		for i := range c.nodes {
			if s := c.Server(i); s != nil && !s.JetStreamIsCurrent() {
				return false
			}
		}
		return true
	})
	return leader
}

// StreamLeader returns the index of the node that leads stream in account
// (GlobalAccount for clients without credentials), or -1 when no running
// node does.
func (c *Cluster) StreamLeader(account, stream string) int {
	for i := range c.nodes {
		if s := c.Server(i); s != nil && s.JetStreamIsStreamLeader(account, stream) {
			return i
		}
	}
	return -1
}

// WaitForStreamLeader polls until stream has a leader and returns its index.
func (c *Cluster) WaitForStreamLeader(tb testing.TB, account, stream string, timeout time.Duration) int {
	tb.Helper()
	var leader int
	c.poll(tb, timeout, "a leader of stream "+stream, func() bool {
		leader = c.StreamLeader(account, stream)
		return leader >= 0
	})
	return leader
}

// StreamCurrent reports whether stream has a leader and every running node
// is current with the meta group and, if it holds a replica of stream, with
// the stream's leader. The leader learns that a restarted peer is back a
// little later: a test that reads the peers from stream info polls that too.
func (c *Cluster) StreamCurrent(account, stream string) bool {
	if c.StreamLeader(account, stream) < 0 {
		return false
	}
	for i := range c.nodes {
		s := c.Server(i)
		if s == nil {
			continue
		}
		if !s.JetStreamIsCurrent() { // it may not know yet that it holds a replica
			return false
		}
		if !s.JetStreamIsStreamAssigned(account, stream) {
			continue
		}
		if !s.JetStreamIsStreamCurrent(account, stream) {
			return false
		}
	}
	return true
}

// State describes every node (name, running, routes, meta leader) for a
// failure message.
func (c *Cluster) State() string {
	var b strings.Builder
	for i, nd := range c.nodes {
		s := c.Server(i)
		if s == nil {
			fmt.Fprintf(&b, "%s: stopped; ", nd.name)
			continue
		}
		fmt.Fprintf(&b, "%s: routes=%d meta-leader=%v current=%v; ", nd.name, s.NumRoutes(), s.JetStreamIsLeader(), s.JetStreamIsCurrent())
	}
	return b.String()
}

func (c *Cluster) poll(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("natstest: no %s within %s (%s)", what, timeout, c.State())
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// freePort returns a loopback TCP port that was free a moment ago. Cluster
// ports must be known before any node starts (each node routes to all), so
// they cannot be -1.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("natstest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
