package consumer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

const testLeaseTTL = 1200 * time.Millisecond

// leaseLog records the hooks' calls of every member in order.
type leaseLog struct {
	mu     sync.Mutex
	events []string
}

func (l *leaseLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

func (l *leaseLog) index(ev string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Index(l.events, ev)
}

// member is one worker of a dynamic group: a Leaser driving a real Worker
// with real shards, on its own NATS connection.
type member struct {
	t       *testing.T
	name    string
	js      jetstream.JetStream
	close   func()
	w       *consumer.Worker
	leaser  *consumer.Leaser
	dir     string
	mu      sync.Mutex
	shards  map[int]*store.Shard
	cancel  context.CancelFunc // stops the worker
	lcancel context.CancelFunc // stops the leaser
	done    chan struct{}
	workerX chan struct{}
}

func newMember(t *testing.T, s *server.Server, name string, partitions int, log *leaseLog) *member {
	t.Helper()
	return newReplicaMember(t, s, name, partitions, 1, log)
}

// newReplicaMember is newMember in a group of replicas holders per partition.
func newReplicaMember(t *testing.T, s *server.Server, name string, partitions, replicas int, log *leaseLog) *member {
	t.Helper()
	nc := natstest.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{t: t, name: name, js: js, close: nc.Close, dir: t.TempDir(), shards: map[int]*store.Shard{}}
	m.w, err = consumer.New(js, consumer.Config{Dynamic: true, ConsumerPrefix: "memindex-" + name, BatchSize: 50}, nil, emb)
	if err != nil {
		t.Fatal(err)
	}
	hooks := consumer.LeaseHooks{
		Gain: func(ctx context.Context, p int, owner bool, fence time.Time) error {
			sh, err := store.Open(ctx, filepath.Join(m.dir, fmt.Sprintf("p%d.db", p)), store.Config{Dims: testDims})
			if err != nil {
				return err
			}
			if err := m.w.Add(ctx, p, sh, fence); err != nil {
				_ = sh.Close(ctx)
				return err
			}
			m.mu.Lock()
			m.shards[p] = sh
			m.mu.Unlock()
			log.add("%s gain %d", name, p)
			return nil
		},
		Drop: func(ctx context.Context, p int, handover bool) {
			sh, _ := m.w.Remove(ctx, p, true)
			log.add("%s drop %d", name, p)
			if sh != nil {
				_ = sh.(*store.Shard).Close(context.Background())
			}
			m.mu.Lock()
			delete(m.shards, p)
			m.mu.Unlock()
		},
		Fence: m.w.SetFence,
	}
	m.leaser, err = consumer.NewLeaser(context.Background(), js, consumer.LeaseConfig{
		Group: "g", Worker: name, Partitions: partitions, Replicas: replicas, TTL: testLeaseTTL}, hooks)
	if err != nil {
		t.Fatalf("NewLeaser: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lctx, lcancel := context.WithCancel(ctx)
	m.cancel, m.lcancel, m.done, m.workerX = cancel, lcancel, make(chan struct{}), make(chan struct{})
	go func() { defer close(m.workerX); _ = m.w.Run(ctx) }()
	go func() { defer close(m.done); m.leaser.Run(lctx) }()
	t.Cleanup(m.stop)
	return m
}

// stop hands everything over and stops the worker.
func (m *member) stop() {
	m.cancel()
	<-m.done
	<-m.workerX
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, sh := range m.shards {
		_ = sh.Close(context.Background())
		delete(m.shards, p)
	}
}

func (m *member) applied(p int) uint64 {
	a, _ := m.w.Applied(p)
	return a
}

// poll waits for cond, failing with what() when the deadline passes.
func poll(t *testing.T, within time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func groupServer(t *testing.T, partitions int) (*server.Server, jetstream.JetStream) {
	t.Helper()
	s := natstest.Server(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.EnsureStreams(context.Background(), js, consumer.StreamConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	return s, js
}

func TestLeasesSpreadEvenlyAndMoveOnGracefulStop(t *testing.T) {
	const partitions = 8
	s, _ := groupServer(t, partitions)
	var log leaseLog
	a := newMember(t, s, "a", partitions, &log)
	b := newMember(t, s, "b", partitions, &log)
	spread := func() bool {
		ha, hb := a.leaser.Held(), b.leaser.Held()
		all := append(slices.Clone(ha), hb...)
		slices.Sort(all)
		return len(ha) == partitions/2 && len(hb) == partitions/2 && len(slices.Compact(all)) == partitions
	}
	poll(t, 20*time.Second, spread, func() string {
		return fmt.Sprintf("held a=%v b=%v, want %d each, disjoint", a.leaser.Held(), b.leaser.Held(), partitions/2)
	})
	if got := a.w.Held(); len(got) != partitions/2 {
		t.Fatalf("worker a consumes %v, want the %d partitions it leases", got, partitions/2)
	}
	a.stop()
	if got := a.leaser.Held(); len(got) != 0 {
		t.Fatalf("a holds %v after a graceful stop, want none", got)
	}
	poll(t, 20*time.Second, func() bool { return len(b.leaser.Held()) == partitions }, func() string {
		return fmt.Sprintf("b holds %v after a stopped, want all %d", b.leaser.Held(), partitions)
	})
	if got := b.w.Held(); len(got) != partitions {
		t.Fatalf("worker b consumes %v, want all %d", got, partitions)
	}
}

func TestDeadWorkersLeasesMoveAfterTTLAndItStopsFirst(t *testing.T) {
	const partitions = 4
	s, _ := groupServer(t, partitions)
	var log leaseLog
	a := newMember(t, s, "a", partitions, &log)
	poll(t, 20*time.Second, func() bool { return len(a.leaser.Held()) == partitions }, func() string {
		return fmt.Sprintf("a holds %v, want all", a.leaser.Held())
	})
	b := newMember(t, s, "b", partitions, &log)
	poll(t, 20*time.Second, func() bool { return len(b.leaser.Held()) == partitions/2 }, func() string {
		return fmt.Sprintf("b holds %v, want %d", b.leaser.Held(), partitions/2)
	})
	aHeld := a.leaser.Held()
	// a dies: its connection is gone, nothing is released.
	a.close()
	poll(t, 20*time.Second, func() bool { return len(b.leaser.Held()) == partitions }, func() string {
		return fmt.Sprintf("b holds %v after a died, want all %d", b.leaser.Held(), partitions)
	})
	for _, p := range aHeld {
		drop, gain := log.index(fmt.Sprintf("a drop %d", p)), log.index(fmt.Sprintf("b gain %d", p))
		if drop < 0 || gain < 0 || drop > gain {
			t.Errorf("partition %d: a dropped at event %d, b gained at %d; want a to stop before b starts (events %v)", p, drop, gain, log.events)
		}
	}
}

func TestStolenLeaseStopsWritesBeforeAnotherStarts(t *testing.T) {
	const partitions = 1
	s, js := groupServer(t, partitions)
	var log leaseLog
	a := newMember(t, s, "a", partitions, &log)
	poll(t, 20*time.Second, func() bool { return len(a.leaser.Held()) == 1 }, func() string { return "a holds nothing" })
	publish := func(n int, from int) uint64 {
		var last uint64
		for i := range n {
			b := fmt.Appendf(nil, `{"type":"message","namespace":"ns","sessionKey":"k","sessionId":"s","seq":%d,"text":"hello %d","timestamp":"2026-11-30T09:00:00Z"}`, from+i, from+i)
			ack, err := js.Publish(context.Background(), memindex.EventSubject("ns"), b)
			if err != nil {
				t.Fatal(err)
			}
			last = ack.Sequence
		}
		return last
	}
	last := publish(5, 1)
	poll(t, 20*time.Second, func() bool { return a.applied(0) == last }, func() string {
		return fmt.Sprintf("a applied %d, want %d", a.applied(0), last)
	})
	// Another writer takes the key: a's next renewal finds a newer revision.
	kv, err := js.KeyValue(context.Background(), consumer.LeaseBucket("g"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "leases.0.0", []byte(`{"worker":"thief"}`)); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, func() bool { return log.index("a drop 0") >= 0 }, func() string {
		return fmt.Sprintf("a did not stop after its lease was taken: %v", log.events)
	})
	stopped := a.applied(0)
	// a leaves the group (it holds nothing to hand over) but its worker
	// keeps running: had it not stopped the partition, it would write on.
	a.lcancel()
	<-a.done
	// The thief goes away; b claims the partition and applies what follows.
	if err := kv.Delete(context.Background(), "leases.0.0"); err != nil {
		t.Fatal(err)
	}
	b := newMember(t, s, "b", partitions, &log)
	last = publish(5, 6)
	poll(t, 20*time.Second, func() bool { return b.applied(0) == last }, func() string {
		return fmt.Sprintf("b applied %d, want %d", b.applied(0), last)
	})
	if got := a.applied(0); got != stopped {
		t.Fatalf("a's applied sequence moved from %d to %d after it lost its lease", stopped, got)
	}
	if drop, gain := log.index("a drop 0"), log.index("b gain 0"); drop > gain {
		t.Fatalf("a dropped at event %d after b gained at %d: %v", drop, gain, log.events)
	}
}

func TestFencedPartitionDoesNotCommit(t *testing.T) {
	_, js := groupServer(t, 1)
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	w, err := consumer.New(js, consumer.Config{Dynamic: true, BatchSize: 10}, nil, emb)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Close(context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { defer close(done); _ = w.Run(ctx) }()
	// Fenced from the start: the lease ended a second ago.
	if err := w.Add(ctx, 0, sh, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, memindex.EventSubject("ns"), []byte(`{"type":"message","namespace":"ns","sessionKey":"k","sessionId":"s","seq":1,"text":"hello","timestamp":"2026-11-30T09:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	// The batch is refused with ErrFenced, visible in status.
	poll(t, 20*time.Second, func() bool {
		st := w.Status(ctx)
		return len(st) == 1 && st[0].Error != ""
	}, func() string { return fmt.Sprintf("status %+v shows no fenced batch", w.Status(ctx)) })
	if got, _ := sh.AppliedSeq(ctx); got != 0 {
		t.Fatalf("fenced partition committed up to %d, want nothing", got)
	}
	w.SetFence(0, time.Now().Add(time.Hour))
	poll(t, 20*time.Second, func() bool { a, _ := w.Applied(0); return a == ack.Sequence }, func() string {
		a, _ := w.Applied(0)
		return fmt.Sprintf("applied %d after the fence moved, want %d", a, ack.Sequence)
	})
}

// leaseSlots reads the group's lease table as "p.slot=worker" entries.
func leaseSlots(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	table, err := consumer.LeaseTable(context.Background(), js, "g")
	if err != nil {
		t.Fatalf("LeaseTable: %v", err)
	}
	out := make([]string, 0, len(table))
	for _, l := range table {
		out = append(out, fmt.Sprintf("%d.%d=%s", l.Partition, l.Slot, l.Worker))
	}
	return out
}

// ownsAll reports whether m holds the owner lease (slot 0) of every partition.
func (m *member) ownsAll(partitions int) bool {
	leases, _ := m.leaser.Leases()
	for p := range partitions {
		if !leases[p].Owner {
			return false
		}
	}
	return true
}

// TestReplicaIsPromotedWhenTheOwnerDies: a owns both partitions, b holds
// their replica slots; a dies and b becomes the owner of both, keeping its
// shards (no drop, no second gain), so no partition is left without an
// owner although no third worker could claim slot 0.
func TestReplicaIsPromotedWhenTheOwnerDies(t *testing.T) {
	const partitions = 2
	s, js := groupServer(t, partitions)
	var log leaseLog
	a := newReplicaMember(t, s, "a", partitions, 2, &log)
	poll(t, 20*time.Second, func() bool { return a.ownsAll(partitions) }, func() string {
		return fmt.Sprintf("a holds %v, want the owner slot of both", leaseSlots(t, js))
	})
	b := newReplicaMember(t, s, "b", partitions, 2, &log)
	want := []string{"0.0=a", "0.1=b", "1.0=a", "1.1=b"}
	poll(t, 20*time.Second, func() bool { return slices.Equal(leaseSlots(t, js), want) }, func() string {
		return fmt.Sprintf("leases %v, want %v", leaseSlots(t, js), want)
	})
	a.close() // a dies: nothing is handed over
	want = []string{"0.0=b", "1.0=b"}
	poll(t, 20*time.Second, func() bool { return b.ownsAll(partitions) && slices.Equal(leaseSlots(t, js), want) }, func() string {
		return fmt.Sprintf("leases %v after the owner died, want %v (b promoted)", leaseSlots(t, js), want)
	})
	for p := range partitions {
		if log.index(fmt.Sprintf("b drop %d", p)) >= 0 {
			t.Errorf("b dropped partition %d when promoted: %v; want it to keep its shard", p, log.events)
		}
	}
	if got := slices.Sorted(slices.Values(b.w.Held())); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("b consumes %v after its promotion, want [0 1]", got)
	}
}

// TestOwnerSlotGoesToTheReplicaNotANewWorker: with a third worker free to
// claim, a dead owner's slot still goes to the partition's replica (it is
// caught up) and the third worker takes the replica slot it leaves.
func TestOwnerSlotGoesToTheReplicaNotANewWorker(t *testing.T) {
	const partitions = 2
	s, js := groupServer(t, partitions)
	var log leaseLog
	a := newReplicaMember(t, s, "a", partitions, 2, &log)
	poll(t, 20*time.Second, func() bool { return a.ownsAll(partitions) }, func() string {
		return fmt.Sprintf("a holds %v, want the owner slot of both", leaseSlots(t, js))
	})
	newReplicaMember(t, s, "b", partitions, 2, &log)
	want := []string{"0.0=a", "0.1=b", "1.0=a", "1.1=b"}
	poll(t, 20*time.Second, func() bool { return slices.Equal(leaseSlots(t, js), want) }, func() string {
		return fmt.Sprintf("leases %v, want %v", leaseSlots(t, js), want)
	})
	c := newReplicaMember(t, s, "c", partitions, 2, &log)
	poll(t, 20*time.Second, func() bool {
		_, members := c.leaser.Leases()
		return members == 3
	}, func() string { return "c does not see three members" })
	a.close()
	want = []string{"0.0=b", "0.1=c", "1.0=b", "1.1=c"}
	poll(t, 20*time.Second, func() bool { return slices.Equal(leaseSlots(t, js), want) }, func() string {
		return fmt.Sprintf("leases %v after the owner died, want %v", leaseSlots(t, js), want)
	})
}

// TestLateJoinerGetsReplicaSlots: a and b hold every slot of 4 partitions
// (R=2); when c joins, both hand over their highest partition's slot, and
// c, which can hold one slot of a partition, would be left below its share
// with a slot free for good. A member at its share swaps a lease so that
// every partition ends with two holders.
func TestLateJoinerGetsReplicaSlots(t *testing.T) {
	const partitions = 4
	s, js := groupServer(t, partitions)
	var log leaseLog
	a := newReplicaMember(t, s, "a", partitions, 2, &log)
	poll(t, 20*time.Second, func() bool { return len(a.leaser.Held()) == partitions }, func() string {
		return fmt.Sprintf("a holds %v, want all", a.leaser.Held())
	})
	b := newReplicaMember(t, s, "b", partitions, 2, &log)
	poll(t, 20*time.Second, func() bool { return len(leaseSlots(t, js)) == 2*partitions }, func() string {
		return fmt.Sprintf("leases %v, want every slot held", leaseSlots(t, js))
	})
	c := newReplicaMember(t, s, "c", partitions, 2, &log)
	full := func() bool {
		table := leaseSlots(t, js)
		if len(table) != 2*partitions {
			return false
		}
		for p := range partitions {
			ha, hb, hc := slices.Contains(a.leaser.Held(), p), slices.Contains(b.leaser.Held(), p), slices.Contains(c.leaser.Held(), p)
			n := 0
			for _, h := range []bool{ha, hb, hc} {
				if h {
					n++
				}
			}
			if n != 2 {
				return false
			}
		}
		return len(c.leaser.Held()) >= 2
	}
	poll(t, 20*time.Second, full, func() string {
		return fmt.Sprintf("leases %v: a=%v b=%v c=%v; want 2 holders of each partition and c holding at least 2",
			leaseSlots(t, js), a.leaser.Held(), b.leaser.Held(), c.leaser.Held())
	})
}
