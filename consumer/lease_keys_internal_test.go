package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex/internal/natstest"
)

// TestBucketKeysMissNothing lists a bucket of 40 keys, each rewritten in a
// loop by another goroutine, 200 times: every listing must hold each live
// key exactly once and no deleted one. kv.ListKeys alone missed a key in
// about a third of such listings on the box this was written on, which let
// a worker of a replica group take an owner slot its replica was due.
func TestBucketKeysMissNothing(t *testing.T) {
	ctx := context.Background()
	js, kv := testBucket(t, "keys")
	const live, deleted = 40, 5
	var want []string
	for i := range live + deleted {
		k := fmt.Sprintf("k.%d", i)
		if _, err := kv.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
		if i < live {
			want = append(want, k)
		} else if err := kv.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	bk, err := openBucketKeys(ctx, js, kv)
	if err != nil {
		t.Fatal(err)
	}

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; wctx.Err() == nil; i++ {
			if _, err := kv.Put(wctx, want[i%live], []byte("v")); err != nil && wctx.Err() == nil {
				t.Errorf("rewrite: %v", err)
				return
			}
		}
	})
	defer func() { stop(); wg.Wait() }()

	for i := range 200 {
		got, err := bk.list(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Fatalf("listing %d while keys are rewritten: %d keys %q, want the %d live ones %q", i, len(got), got, len(w), w)
		}
	}
}

// stallingKV is a real bucket whose key listings never end on their own:
// the lister delivers the bucket's keys and then holds its channel open
// until its context ends, as a listing whose end-of-values marker never
// arrives does.
type stallingKV struct{ jetstream.KeyValue }

func (s stallingKV) ListKeys(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	inner, err := s.KeyValue.ListKeys(ctx, opts...)
	if err != nil {
		return nil, err
	}
	l := &stalledLister{inner: inner, keys: make(chan string)}
	go func() {
		defer close(l.keys)
		for k := range inner.Keys() {
			select {
			case l.keys <- k:
			case <-ctx.Done():
				return
			}
		}
		<-ctx.Done()
	}()
	return l, nil
}

type stalledLister struct {
	inner jetstream.KeyLister
	keys  chan string
}

func (l *stalledLister) Keys() <-chan string { return l.keys }
func (l *stalledLister) Stop() error         { return l.inner.Stop() }

// TestBucketKeysListingThatNeverEnds: a listing whose end never comes
// returns an error once its wait is over, and the caller's next listing
// is not held up by it. Without the wait, list blocks for good (the
// leaser's main loop then claims no partition again).
func TestBucketKeysListingThatNeverEnds(t *testing.T) {
	ctx := context.Background()
	js, kv := testBucket(t, "stall")
	if _, err := kv.Put(ctx, "k.1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	bk, err := openBucketKeys(ctx, js, stallingKV{kv})
	if err != nil {
		t.Fatal(err)
	}
	bk.wait = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() { _, err := bk.list(ctx); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not end within 200ms") {
			t.Fatalf("a listing that never ends: %v, want its wait exceeded", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a listing that never ends held list for 20s; its wait is 200ms")
	}

	bk.kv = kv // the bucket itself: its listing ends
	got, err := bk.list(ctx)
	if err != nil || !slices.Equal(got, []string{"k.1"}) {
		t.Fatalf("listing after a stalled one: %q, %v; want [k.1]", got, err)
	}
}

// testBucket creates bucket on a server of its own, as a lease bucket is
// made (history 1, a TTL).
func testBucket(t *testing.T, bucket string) (jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	_, js := natstest.ConnectJetStream(t, natstest.Server(t))
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return js, kv
}
