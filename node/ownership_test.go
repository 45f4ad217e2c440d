package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/internal/natstest"
)

func TestParsePartitionSet(t *testing.T) {
	tests := []struct {
		in      string
		count   int
		want    []int
		wantErr string
	}{
		{"all", 4, []int{0, 1, 2, 3}, ""},
		{"", 2, []int{0, 1}, ""},
		{"0-3", 16, []int{0, 1, 2, 3}, ""},
		{"0,3,5-6", 8, []int{0, 3, 5, 6}, ""},
		{"5-6,0,5", 8, []int{0, 5, 6}, ""},
		{"8-15", 16, []int{8, 9, 10, 11, 12, 13, 14, 15}, ""},
		{"0-16", 16, nil, "partition 16 is out of range: the stream has 16 partitions"},
		{"7-3", 16, nil, `"7-3" is not a partition or a range`},
		{"x", 16, nil, `--partitions "x"`},
		{"-1", 16, nil, "is not a partition"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parsePartitionSet(tt.in, tt.count)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePartitionSet(%q)=%v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("parsePartitionSet(%q)=%v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// clusterNode is a worker on the shared server s.
func clusterNode(t *testing.T, s *server.Server, worker string, edit func(*Config)) (*Node, func()) {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.NATS.Server = s.ClientURL()
	cfg.Worker = worker
	cfg.PartitionCount = 16
	cfg.ReadyLag = DefaultReadyLag
	edit(&cfg)
	return runTestNode(t, cfg, nil)
}

// publishNamespaces publishes one message naming its namespace to each of
// namespaces and returns the last stream sequence.
func publishNamespaces(t *testing.T, js jetstream.JetStream, namespaces []string) {
	t.Helper()
	for i, ns := range namespaces {
		b, _ := json.Marshal(memindex.Event{Type: memindex.TypeMessage, Namespace: ns, SessionKey: "chat", SessionID: "s1",
			Seq: 1, ID: fmt.Sprintf("m-%d", i), Speaker: "Ana", Text: "the marmalade recipe of " + ns, Timestamp: "2026-11-30T09:00:00Z"})
		if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), b); err != nil {
			t.Fatal(err)
		}
	}
}

// searchRaw sends a search as `nats req` does and returns its hits' count or
// the service error.
func searchRaw(nc *nats.Conn, ns string) (int, error) {
	msg, err := nc.Request(memindex.SearchSubject(ns), []byte(`{"query":"marmalade recipe"}`), 10*time.Second)
	if err != nil {
		return 0, err
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		return 0, fmt.Errorf("%s %s", code, msg.Header.Get("Nats-Service-Error"))
	}
	var resp memindex.SearchResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, err
	}
	for _, h := range resp.Hits {
		if !strings.Contains(h.Text, ns) {
			return 0, fmt.Errorf("search %s returned %q of another namespace", ns, h.Text)
		}
	}
	return len(resp.Hits), nil
}

func testNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("agent-%d", i)
	}
	return out
}

func TestStaticOwnersAnswerEveryNamespaceThroughEitherWorker(t *testing.T) {
	s := natstest.Server(t)
	a, _ := clusterNode(t, s, "w1", func(c *Config) { c.Partitions = "0-7" })
	b, _ := clusterNode(t, s, "w2", func(c *Config) { c.Partitions = "8-15" })
	if got := a.serving.worker.Held(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("w1 consumes %v, want 0-7", got)
	}
	namespaces := testNamespaces(32)
	halves := map[bool]int{}
	for _, ns := range namespaces {
		halves[memindex.Partition(ns, 16) < 8]++
	}
	if halves[true] == 0 || halves[false] == 0 {
		t.Fatalf("namespaces fall in one half only: %v", halves)
	}
	js, _ := jetstream.New(a.nc)
	publishNamespaces(t, js, namespaces)
	for _, n := range []*Node{a, b} {
		for _, ns := range namespaces {
			// Each request goes to whichever worker the queue group picks;
			// several per namespace reach the owner and the other one.
			for range 4 {
				var hits int
				waitUntil(t, 20*time.Second, "search "+ns+" answered with a hit", func() bool {
					var err error
					hits, err = searchRaw(n.nc, ns)
					if err != nil && !strings.HasPrefix(err.Error(), "503") {
						t.Fatalf("search %s through %s: %v", ns, n.cfg.Worker, err)
					}
					return hits > 0
				})
			}
		}
	}
	// The Go client goes straight to the partition's holder.
	c := client.NewClient(b.nc)
	sts, err := c.Status(context.Background(), 2*time.Second)
	if err != nil || len(sts) != 2 || sts[0].PartitionCount != 16 {
		t.Fatalf("Status()=%d answers (%v), want 2 with partitionCount 16", len(sts), err)
	}
	for _, ns := range namespaces {
		resp, err := c.Search(context.Background(), memindex.SearchRequest{Namespace: ns, Query: "marmalade recipe"})
		if err != nil || len(resp.Hits) == 0 {
			t.Fatalf("client Search(%s)=%d hits, %v; want hits", ns, len(resp.Hits), err)
		}
	}
}

// heldBy returns what each node's leaser holds.
func heldBy(ns ...*Node) string {
	var out []string
	for _, n := range ns {
		out = append(out, fmt.Sprintf("%s=%v", n.cfg.Worker, n.own.leaser.Load().Held()))
	}
	return strings.Join(out, " ")
}

func TestGroupSpreadsAndTakesOverAfterGracefulStop(t *testing.T) {
	s := natstest.Server(t)
	group := func(c *Config) { c.Group, c.PartitionCount, c.LeaseTTL = "g", 8, 1200*time.Millisecond }
	a, stopA := clusterNode(t, s, "w1", group)
	b, _ := clusterNode(t, s, "w2", group)
	waitUntil(t, 30*time.Second, "partitions spread 4/4", func() bool {
		return len(a.own.leaser.Load().Held()) == 4 && len(b.own.leaser.Load().Held()) == 4
	})
	if all := append(a.own.leaser.Load().Held(), b.own.leaser.Load().Held()...); len(slices.Compact(slices.Sorted(slices.Values(all)))) != 8 {
		t.Fatalf("held %s, want every partition once", heldBy(a, b))
	}
	namespaces := testNamespaces(16)
	js, _ := jetstream.New(a.nc)
	publishNamespaces(t, js, namespaces)
	for _, ns := range namespaces {
		waitUntil(t, 30*time.Second, "search "+ns+" through w2", func() bool {
			hits, err := searchRaw(b.nc, ns)
			if err != nil && !strings.HasPrefix(err.Error(), "503") {
				t.Fatalf("search %s: %v", ns, err)
			}
			return hits > 0
		})
	}
	// w1 stops gracefully: its partitions move to w2; meanwhile searches
	// answer or fail only with a clear 503 "not ready".
	stopped := make(chan struct{})
	go func() { defer close(stopped); stopA() }()
	var notReady int
	for i := 0; ; i++ {
		ns := namespaces[i%len(namespaces)]
		hits, err := searchRaw(b.nc, ns)
		switch {
		case err != nil && strings.HasPrefix(err.Error(), "503") && strings.Contains(err.Error(), "retry"):
			notReady++
		case err != nil:
			t.Fatalf("search %s during the hand-over: %v", ns, err)
		case hits == 0:
			t.Fatalf("search %s during the hand-over: no hit, want the namespace's message or a 503", ns)
		}
		select {
		case <-stopped:
		default:
			continue
		}
		break
	}
	waitUntil(t, 30*time.Second, "w2 holds and serves all 8", func() bool {
		for p := range 8 {
			if !b.holds(p) {
				return false
			}
		}
		return true
	})
	for _, ns := range namespaces {
		if hits, err := searchRaw(b.nc, ns); err != nil || hits == 0 {
			t.Fatalf("search %s after the take-over: %d hits, %v", ns, hits, err)
		}
	}
	st := b.status(context.Background())
	if st.Group != "g" || len(st.Partitions) != 8 || st.Partitions[0].State != memindex.StateReady || st.Partitions[0].Role != memindex.RoleOwner {
		t.Fatalf("status group=%q partitions=%d first=%+v; want group g, 8 ready owned partitions", st.Group, len(st.Partitions), st.Partitions)
	}
	t.Logf("searches answered 503 not ready during the hand-over: %d", notReady)
	jsb, _ := jetstream.New(b.nc)
	table, err := consumer.LeaseTable(context.Background(), jsb, "g")
	if err != nil || len(table) != 8 {
		t.Fatalf("LeaseTable()=%v, %v; want 8 leases", table, err)
	}
	for _, l := range table {
		if l.Worker != "w2" {
			t.Fatalf("lease %+v after the take-over, want w2's", l)
		}
	}
}

func TestGroupTakesOverADeadWorkersPartitionsAfterTheTTL(t *testing.T) {
	s := natstest.Server(t)
	group := func(c *Config) { c.Group, c.PartitionCount, c.LeaseTTL = "g", 4, 1200*time.Millisecond }
	a, _ := clusterNode(t, s, "w1", group)
	b, _ := clusterNode(t, s, "w2", group)
	waitUntil(t, 30*time.Second, "partitions spread 2/2", func() bool {
		return len(a.own.leaser.Load().Held()) == 2 && len(b.own.leaser.Load().Held()) == 2
	})
	// w1 dies: its NATS connection is gone and nothing is handed over.
	a.nc.Close()
	waitUntil(t, 30*time.Second, "w2 holds and serves all 4 ("+heldBy(b)+")", func() bool {
		for p := range 4 {
			if !b.holds(p) {
				return false
			}
		}
		return true
	})
	if got := a.serving.worker.Held(); len(got) != 0 {
		t.Fatalf("the dead worker still consumes %v; it must have stopped when its leases ended", got)
	}
	namespaces := testNamespaces(8)
	js, _ := jetstream.New(b.nc)
	publishNamespaces(t, js, namespaces)
	for _, ns := range namespaces {
		waitUntil(t, 30*time.Second, "search "+ns+" after the take-over", func() bool {
			hits, err := searchRaw(b.nc, ns)
			return err == nil && hits > 0
		})
	}
}
