package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex/consumer"
	"memindex/internal/natstest"
)

// TestSlowGainKeepsTheOtherLeasesRenewed: gaining a partition can take
// longer than the fence (restoring a big snapshot, creating consumers
// while the cluster elects leaders). Meanwhile the partitions already held
// keep being renewed and keep their fence moving; none is dropped.
func TestSlowGainKeepsTheOtherLeasesRenewed(t *testing.T) {
	s := natstest.Server(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
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
	l, err := consumer.NewLeaser(context.Background(), js, consumer.LeaseConfig{
		Group: "slow", Worker: "w", Partitions: 2, Replicas: 1, TTL: testLeaseTTL}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { release(); cancel(); <-done }()

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
