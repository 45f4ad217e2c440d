package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex/consumer"
)

// TestSlowGainKeepsTheOtherLeasesRenewed: gaining a partition can take
// longer than the fence (restoring a big snapshot, creating consumers
// while the cluster elects leaders). Meanwhile the partitions already held
// keep being renewed and keep their fence moving; none is dropped.
func TestSlowGainKeepsTheOtherLeasesRenewed(t *testing.T) {
	_, js := groupServer(t, 1)
	var (
		mu         sync.Mutex
		gained     []int
		slowSince  time.Time // when the slow Gain began
		fences     = map[int]time.Time{}
		dropped    []int
		unblock    = make(chan struct{})
		unblockOne sync.Once
	)
	release := func() { unblockOne.Do(func() { close(unblock) }) }
	defer release()
	hooks := consumer.LeaseHooks{
		Gain: func(ctx context.Context, p int, owner bool, fence time.Time) error {
			mu.Lock()
			gained = append(gained, p)
			slow := len(gained) == 2
			if slow {
				slowSince = time.Now()
			}
			fences[p] = fence
			mu.Unlock()
			if slow { // the second partition takes its time
				select {
				case <-unblock:
				case <-ctx.Done():
				}
			}
			return nil
		},
		Drop: func(ctx context.Context, p int, handover bool) {
			mu.Lock()
			dropped = append(dropped, p)
			mu.Unlock()
		},
		Fence: func(p int, until time.Time) {
			mu.Lock()
			fences[p] = until
			mu.Unlock()
		},
	}
	l := runLeaser(t, js, "slow", 2, hooks)
	defer release() // before the leaser stops (runLeaser's cleanup): a blocked hook returns

	// While the second Gain blocks, the first partition's fence must move
	// past where it stood when that Gain began plus a whole TTL.
	state := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("gained %v, slow gain since %s, fences %v, dropped %v", gained, slowSince.Format(time.StampMilli), fences, dropped)
	}
	poll(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(gained) == 2 && fences[gained[0]].After(slowSince.Add(testLeaseTTL))
	}, func() string { return "the first partition's fence to keep moving during the slow gain: " + state() })
	mu.Lock()
	if len(dropped) != 0 {
		mu.Unlock()
		t.Fatalf("dropped %v during a slow gain, want none: %s", dropped, state())
	}
	mu.Unlock()
	release()
	poll(t, 20*time.Second, func() bool { return len(l.Held()) == 2 }, func() string { return fmt.Sprintf("held %v, want both: %s", l.Held(), state()) })
}

// TestGainWaitsForTheDropOfTheSamePartition: a lease lost at renewal is
// dropped on the renewals' goroutine, and the main loop, seeing the
// partition free, claims it again at once. The new Gain must wait until
// that Drop has stopped the old holder: a node's Drop closes the shard it
// finds for the partition, which would be the one the new Gain had just
// opened (TestClusterEndToEnd once ended with a partition held on a
// closed shard, applying nothing).
func TestGainWaitsForTheDropOfTheSamePartition(t *testing.T) {
	_, js := groupServer(t, 1)
	var (
		mu       sync.Mutex
		gains    int
		dropping bool
		overlaps int
		drops    = make(chan struct{}, 8)
		unblock  = make(chan struct{})
		once     sync.Once
	)
	release := func() { once.Do(func() { close(unblock) }) }
	defer release()
	hooks := consumer.LeaseHooks{
		Gain: func(ctx context.Context, p int, owner bool, fence time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			gains++
			if dropping {
				overlaps++
			}
			return nil
		},
		Drop: func(ctx context.Context, p int, handover bool) {
			mu.Lock()
			dropping = true
			mu.Unlock()
			drops <- struct{}{}
			select { // the old holder takes its time to stop
			case <-unblock:
			case <-ctx.Done():
			}
			mu.Lock()
			dropping = false
			mu.Unlock()
		},
		Fence: func(p int, until time.Time) {},
	}
	l := runLeaser(t, js, "regain", 1, hooks)
	defer release() // before the leaser stops (runLeaser's cleanup): a blocked hook returns
	count := func() (int, int) { mu.Lock(); defer mu.Unlock(); return gains, overlaps }
	poll(t, 20*time.Second, func() bool { return len(l.Held()) == 1 }, func() string { return "the partition to be held" })

	// Another party removes the lease: the next renewal finds it gone and
	// drops the partition, and the Drop blocks.
	kv, err := js.KeyValue(context.Background(), consumer.LeaseBucket("regain"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := kv.Get(context.Background(), "leases.0.0")
	if err != nil {
		t.Fatal(err)
	}
	// The claim is watched, not read: while its Gain waits nothing renews
	// the new key, and the bucket's TTL removes it again after 1.2 s, which a
	// loaded machine's polling can miss (a CI run did).
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	w, err := kv.Watch(wctx, "leases.0.0", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(context.Background(), "leases.0.0"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drops:
	case <-time.After(20 * time.Second):
		t.Fatal("no Drop after the lease was deleted")
	}
	// The main loop claims the free partition again (its key is created
	// before Gain runs); give a Gain that would not wait the moment it needs.
	claimed := time.After(20 * time.Second)
	for again := false; !again; {
		select {
		case e := <-w.Updates():
			again = e != nil && e.Operation() == jetstream.KeyValuePut && e.Revision() > first.Revision()
		case <-claimed:
			t.Fatal("not within 20s: the partition's lease to be claimed again")
		}
	}
	<-time.After(time.Second)
	if g, o := count(); o != 0 {
		t.Fatalf("%d Gain calls, %d of them while the partition's Drop was running", g, o)
	}
	release()
	poll(t, 20*time.Second, func() bool { g, _ := count(); return g >= 2 }, func() string { return "the second Gain after the Drop" })
	if g, o := count(); o != 0 {
		t.Fatalf("%d Gain calls, %d of them while the partition's Drop was running", g, o)
	}
}

// runLeaser starts a Leaser of worker "w" in group with one slot of each of
// partitions and the test lease TTL, and stops it at cleanup.
func runLeaser(t *testing.T, js jetstream.JetStream, group string, partitions int, hooks consumer.LeaseHooks) *consumer.Leaser {
	t.Helper()
	l, err := consumer.NewLeaser(context.Background(), js, consumer.LeaseConfig{
		Group: group, Worker: "w", Partitions: partitions, Replicas: 1, TTL: testLeaseTTL, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// TestTheMainLoopDoesNotWaitForABusyLease: while one lease's renewal is
// stuck inside a hook (here Fence; in production a lease found lost runs
// a Drop that closes its shard), the main loop goes on claiming. It once
// waited on that lease in its replica promotion pass and claimed nothing
// until the hook returned (TestGainWaitsForTheDropOfTheSamePartition
// failed in CI that way).
func TestTheMainLoopDoesNotWaitForABusyLease(t *testing.T) {
	_, js := groupServer(t, 2)
	const group = "busy"
	var (
		mu      sync.Mutex
		gained  []int
		stick   bool // the next Fence blocks
		stuck   = make(chan struct{})
		unblock = make(chan struct{})
		once    sync.Once
	)
	release := func() { once.Do(func() { close(unblock) }) }
	defer release()
	hooks := consumer.LeaseHooks{
		Gain: func(ctx context.Context, p int, owner bool, fence time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			gained = append(gained, p)
			return nil
		},
		Drop: func(ctx context.Context, p int, handover bool) {},
		Fence: func(p int, until time.Time) {
			mu.Lock()
			block := stick
			stick = false
			mu.Unlock()
			if block {
				close(stuck)
				select {
				case <-unblock:
				case <-time.After(time.Minute):
				}
			}
		},
	}
	// A second member, kept alive by the test, halves the worker's share
	// to one of the two partitions.
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{
		Bucket: consumer.LeaseBucket(group), History: 1, TTL: testLeaseTTL, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	member := func() {
		if _, err := kv.Put(context.Background(), "members.other", []byte(`{"worker":"other"}`)); err != nil {
			t.Fatal(err)
		}
	}
	member()
	l := runLeaser(t, js, group, 2, hooks)
	defer release() // before the leaser stops (runLeaser's cleanup): a blocked hook returns
	gainedNow := func() []int { mu.Lock(); defer mu.Unlock(); return slices.Clone(gained) }
	for deadline := time.Now().Add(20 * time.Second); len(gainedNow()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("not within 20s: a partition to be claimed")
		}
		member()
		time.Sleep(testLeaseTTL / 6)
	}
	if g := gainedNow(); len(g) != 1 {
		t.Fatalf("gained %v with a share of one partition", g)
	}
	// The held lease's next renewal sticks in Fence, holding the lease.
	mu.Lock()
	stick = true
	mu.Unlock()
	select {
	case <-stuck:
	case <-time.After(20 * time.Second):
		t.Fatal("no renewal reached Fence")
	}
	// The other member leaves: the share is both partitions, and the main
	// loop must claim the second while the first lease is still busy.
	if err := kv.Delete(context.Background(), "members.other"); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, func() bool { return len(gainedNow()) == 2 },
		func() string {
			return fmt.Sprintf("the second partition to be claimed while a renewal is stuck: gained %v, held %v", gainedNow(), l.Held())
		})
}
