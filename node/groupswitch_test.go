package node

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/internal/natstest"
)

// TestEmbedderSwitchInAGroup restarts one worker of a --group of two with
// another embedder dimension while the other worker leaves and rejoins the
// group over and over, so that partitions are gained and dropped on the
// switching worker before, during and after it retires its old generation
// (switchOver and gain/drop share that generation's shard map: run with
// -race). The switch completes; afterwards the worker's shards are all of
// the new dimension and intact, the old generation leaves no shard file and
// no consumer behind, and every namespace is found through both workers.
func TestEmbedderSwitchInAGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts workers of a group many times")
	}
	s := natstest.Server(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	const partitions = 16
	cfgFor := func(dir, worker string, dims int) Config {
		c := testConfig(dir)
		c.NATS.Server = s.ClientURL()
		c.Worker, c.Group, c.PartitionCount, c.LeaseTTL = worker, "g", partitions, 1200*time.Millisecond
		c.ReadyLag = DefaultReadyLag
		c.Embedder.Dims = dims
		return c
	}
	held := func(n *Node) int { return len(n.own.leaser.Load().Held()) }
	a, stopA := runTestNode(t, cfgFor(dirA, "w1", 384), nil)
	b, stopB := runTestNode(t, cfgFor(dirB, "w2", 384), nil)
	waitUntil(t, 30*time.Second, "partitions spread evenly", func() bool { return held(a) == partitions/2 && held(b) == partitions/2 })
	namespaces := testNamespaces(24)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	publishNamespaces(t, js, namespaces)
	found := func(n *Node, ns string) bool {
		hits, err := searchRaw(n.nc, ns)
		return err == nil && hits > 0
	}
	for _, ns := range namespaces {
		waitUntil(t, 30*time.Second, "search "+ns, func() bool { return found(b, ns) })
	}
	stopA()
	waitUntil(t, 30*time.Second, "w2 to hold all partitions", func() bool { return held(b) == partitions })

	a, _ = runTestNode(t, cfgFor(dirA, "w1", 256), nil)
	if !a.switching() {
		t.Fatal("the restart with another dimension did not start building a new vector set")
	}
	a.genMu.RLock()
	old := a.serving
	a.genMu.RUnlock()

	// w2 leaves and rejoins until w1's switch is over: each time w1 gains
	// its partitions, then hands them back.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var rounds int
	wg.Go(func() {
		until := func(cond func() bool) {
			for !cond() && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
		for ctx.Err() == nil {
			stopB()
			until(func() bool { return held(a) == partitions })
			b, stopB = runTestNode(t, cfgFor(dirB, "w2", 384), nil)
			until(func() bool { return held(a) == partitions/2 && held(b) == partitions/2 })
			rounds++
		}
	})
	deadline := time.Now().Add(120 * time.Second)
	for a.switching() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if a.switching() {
		t.Fatalf("the switch did not complete within 120s (%d rounds of w2 leaving and rejoining)", rounds)
	}
	t.Logf("w2 left and rejoined %d times during w1's switch", rounds)
	waitUntil(t, 30*time.Second, "partitions spread evenly after the switch", func() bool { return held(a) == partitions/2 && held(b) == partitions/2 })

	for p, sh := range a.shardsNow() {
		if sh.Dims() != 256 {
			t.Fatalf("partition %d holds %d-dim vectors after the switch, want 256", p, sh.Dims())
		}
		if err := sh.Check(context.Background()); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	// The switch removes the old generation's shard files after it stops
	// reporting itself (switching is false from the swap on); a gain that
	// reopened one after its removal would leave it there for good.
	oldFiles := func() []string {
		ents, _ := filepath.Glob(filepath.Join(old.dir, "p*.db*"))
		return ents
	}
	for deadline := time.Now().Add(30 * time.Second); len(oldFiles()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if ents := oldFiles(); len(ents) > 0 {
		t.Errorf("the old generation's shard files are still there 30s after the switch: %v", ents)
	}
	for p := range partitions {
		name := consumer.ConsumerName(a.holderPrefix(old.name), p)
		if _, err := js.Consumer(context.Background(), memindex.StreamEvents, name); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Errorf("the old generation's consumer %s is still there (%v): a gain added the partition to its stopped worker", name, err)
		}
	}
	for _, ns := range namespaces {
		for _, n := range []*Node{a, b} {
			hits, err := searchRaw(n.nc, ns)
			for deadline := time.Now().Add(30 * time.Second); (err != nil || hits == 0) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				hits, err = searchRaw(n.nc, ns)
			}
			if err != nil || hits == 0 {
				t.Fatalf("search %s through %s after the switch: %d hits, %v; want its message", ns, n.cfg.Worker, hits, err)
			}
		}
	}
}
