package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/internal/natstest"
	"memindex/mcpserver"
	"memindex/node"
)

// startWorker runs a real worker in process (embedded nats-server with
// JetStream on a free port, SQLite shards in a temporary directory, the
// built-in embedder) with 2 partitions, until the test ends. tune, when
// not nil, changes its configuration first.
func startWorker(t testing.TB, tune func(*node.Config)) *node.Node {
	t.Helper()
	c := node.DefaultConfig()
	c.Listen, c.Data, c.PartitionCount, c.Worker = "127.0.0.1:-1", t.TempDir(), 2, "test"
	c.Embedder.Dims, c.Batch, c.EmbedConcurrency, c.SearchPending = 384, 500, 2, 64
	c.HTTP, c.SnapshotInterval, c.CacheMaxBytes, c.ReadyLag = "off", 0, 0, 0
	if tune != nil {
		tune(&c)
	}
	n, err := node.Open(context.Background(), c, nil)
	if err != nil {
		t.Fatalf("node.Open: %v", err)
	}
	stop := n.Start(context.Background())
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	return n
}

// connect connects to url, closed when the test ends.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// newServer is an MCP server on nc with cfg (a short status wait, so that
// memory_add's wait polls often).
func newServer(t testing.TB, nc *nats.Conn, cfg mcpserver.Config) *mcpserver.Server {
	t.Helper()
	if cfg.StatusWait == 0 {
		cfg.StatusWait = 100 * time.Millisecond
	}
	s, err := mcpserver.New(nc, cfg)
	if err != nil {
		t.Fatalf("mcpserver.New: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// httpSession serves s over streamable HTTP on a real loopback listener
// (httptest) and returns the SDK client's session with it.
func httpSession(t testing.TB, s *mcpserver.Server, hc mcpserver.HTTPConfig) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(s.Handler(hc))
	t.Cleanup(ts.Close)
	return clientSession(t, &mcp.StreamableClientTransport{Endpoint: ts.URL + mcpserver.DefaultHTTPPath, MaxRetries: -1})
}

// clientSession connects the SDK's client over tr, closed when the test ends.
func clientSession(t testing.TB, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memindex-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls tool name with args and returns its result (a tool error
// too); a protocol error fails the test.
func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s(%v): %v", name, args, err)
	}
	return res
}

// callOK calls tool name and decodes its structured content into out,
// failing the test on a tool error.
func callOK(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res := call(t, cs, name, args)
	text := textOf(res)
	if res.IsError {
		t.Fatalf("%s(%v): tool error %q", name, args, text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return text
}

// callErr calls tool name and returns the text of its tool error, failing
// the test when it succeeds.
func callErr(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := call(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v) = %q, want a tool error", name, args, textOf(res))
	}
	return textOf(res)
}

// textOf joins a result's text contents.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// publishChat publishes a two-session conversation and a memory file into
// ns and waits until the worker applied them.
func publishChat(t testing.TB, nc *nats.Conn, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.NewClient(nc)
	lines := []struct{ sk, sid, speaker, text string }{
		{"chat", "s1", "Ana", "We move to Lisbon in May, the flat is near the harbour."},
		{"chat", "s1", "Ben", "Great, I will visit the harbour and the old tram line."},
		{"chat", "s1", "Ana", "Bring the blue umbrella, Lisbon rains in spring."},
		{"chat", "s1", "Ben", "My sister Carla plays the cello in an orchestra."},
		{"chat", "s2", "Ana", "The cello concert is on Friday at eight."},
		{"chat", "s2", "Ben", "I booked a table at the fish restaurant by the harbour."},
		{"chat", "s2", "Ana", "Carla said the orchestra tours Porto next year."},
	}
	var last uint64
	seq := map[string]int64{}
	for i, l := range lines {
		seq[l.sid]++
		ack, err := c.Publish(ctx, memindex.Event{Namespace: ns, SessionKey: l.sk, SessionID: l.sid, Seq: seq[l.sid], Speaker: l.speaker, Text: l.text,
			Timestamp: fmt.Sprintf("2026-03-%02dT10:00:00Z", i+1)})
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		last = ack.Seq
	}
	ack, err := c.Publish(ctx, memindex.Event{Type: memindex.TypeFileUpserted, Namespace: ns, Path: "notes/lisbon.md",
		Content: "# Lisbon\n\nThe flat is in Alfama, near the harbour.\nKeys are with the neighbour, Rui.\n"})
	if err != nil {
		t.Fatalf("publish file: %v", err)
	}
	syncTo(t, nc, max(last, ack.Seq))
}

// syncTo waits until the workers applied the stream up to seq.
func syncTo(t testing.TB, nc *nats.Conn, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := client.Open(ctx, client.Config{Backend: client.BackendRemote, Remote: client.RemoteConfig{Conn: nc}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if err := m.Sync(ctx, client.SyncRequest{Seq: seq}); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// bareNATS is a nats-server with JetStream and no worker.
func bareNATS(t testing.TB) string {
	t.Helper()
	return natstest.Server(t).ClientURL()
}
