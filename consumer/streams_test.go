package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

// streamReplicas returns the configured replica count of stream name.
func streamReplicas(t *testing.T, js jetstream.JetStream, name string) int {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return s.CachedInfo().Config.Replicas
}

func TestEnsureStreamsReplicasOnASingleServer(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		replicas int
		want     string
	}{
		{"negative", -1, "stream replicas must be between 1 and 5"},
		{"above JetStream's maximum", 6, "stream replicas must be between 1 and 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Replicas: c.replicas})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("EnsureStreams(Replicas: %d) = %v, want an error containing %q", c.replicas, err, c.want)
			}
		})
	}
	if _, err := js.Stream(ctx, memindex.StreamEvents); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a refused config created the stream: %v", err)
	}

	_, err = consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Replicas: 3})
	if !errors.Is(err, consumer.ErrReplicasUnavailable) {
		t.Fatalf("EnsureStreams(Replicas: 3) on a single server = %v, want ErrReplicasUnavailable", err)
	}
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{}); err != nil {
		t.Fatalf("EnsureStreams(Replicas: 0) = %v", err)
	}
	for _, name := range []string{memindex.StreamEvents, memindex.StreamDLQ} {
		if got := streamReplicas(t, js, name); got != 1 {
			t.Errorf("new stream %s has %d replicas, want 1", name, got)
		}
	}
}

// TestEnsureStreamsReplicasInACluster grows both streams from R1 to R3 on a
// 3-node cluster, keeps R3 when replicas are not configured, refuses to
// reduce them, and checks that a worker's durable consumer is replicated
// like its stream.
func TestEnsureStreamsReplicasInACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-servers")
	}
	c := natstest.NewCluster(t, 3)
	nc := c.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	check := func(step string, want int) {
		t.Helper()
		for _, name := range []string{memindex.StreamEvents, memindex.StreamDLQ} {
			if got := streamReplicas(t, js, name); got != want {
				t.Fatalf("%s: stream %s has %d replicas, want %d", step, name, got, want)
			}
		}
	}
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 2}); err != nil {
		t.Fatalf("EnsureStreams(new, Replicas: 0) = %v", err)
	}
	check("new stream, replicas 0", 1)
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Replicas: 3}); err != nil {
		t.Fatalf("EnsureStreams(R1 → 3) = %v", err)
	}
	check("grown to 3", 3)
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{}); err != nil {
		t.Fatalf("EnsureStreams(R3, Replicas: 0) = %v", err)
	}
	check("replicas 0 keeps them", 3)
	_, err = consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Replicas: 1})
	if !errors.Is(err, consumer.ErrReplicasReduced) {
		t.Fatalf("EnsureStreams(R3 → 1) = %v, want ErrReplicasReduced", err)
	}
	if !strings.Contains(err.Error(), "has 3 replicas, configured 1") {
		t.Fatalf("EnsureStreams(R3 → 1) error %q does not say what the stream has and what was asked", err)
	}
	check("after a refused reduction", 3)
	_, err = consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Replicas: 4})
	if !errors.Is(err, consumer.ErrReplicasUnavailable) {
		t.Fatalf("EnsureStreams(Replicas: 4) on 3 servers = %v, want ErrReplicasUnavailable", err)
	}
	check("after a refused R4", 3)

	// A worker's durable consumer inherits the stream's replicas. Scaling to
	// R3 returns before the new peers are current; creating a consumer
	// meanwhile can fail with "insufficient resources", so wait for them.
	for deadline := time.Now().Add(30 * time.Second); !c.StreamCurrent(natstest.GlobalAccount, memindex.StreamEvents); {
		if time.Now().After(deadline) {
			t.Fatalf("stream %s not current on every peer within 30s: %s", memindex.StreamEvents, c.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Close(context.Background()) })
	w, err := consumer.New(js, consumer.Config{Partitions: []int{0}, BatchSize: 50,
		Chunker: chunker.Config{BudgetTokens: 120}}, map[int]consumer.Shard{0: sh}, emb)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })

	name := consumer.ConsumerName(consumer.DefaultConsumerPrefix, 0)
	cons, err := js.Consumer(ctx, memindex.StreamEvents, name)
	if err != nil {
		t.Fatalf("consumer %s: %v", name, err)
	}
	var info *jetstream.ConsumerInfo
	waitFor(t, "consumer "+name+" to have a leader and 2 replicas", func() bool {
		info, err = cons.Info(ctx)
		return err == nil && info.Cluster != nil && info.Cluster.Leader != "" && len(info.Cluster.Replicas) == 2
	})
	if info.Config.Replicas != 0 && info.Config.Replicas != 3 {
		t.Fatalf("consumer %s config replicas %d, want 0 (inherit) or 3", name, info.Config.Replicas)
	}
}

// TestEnsureStreamsConcurrentlyInACluster starts three workers' stream
// set-up at once on a 3-node cluster, as a deployment's workers do.
func TestEnsureStreamsConcurrentlyInACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-servers")
	}
	c := natstest.NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 3
	errs := make(chan error, n)
	for range n {
		js, err := jetstream.New(c.Connect(t))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			start := time.Now()
			_, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 8, Replicas: 3})
			if err != nil {
				err = fmt.Errorf("after %s: %w", time.Since(start), err)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("EnsureStreams: %v (%s; stream leader %d)", err, c.State(), c.StreamLeader(natstest.GlobalAccount, memindex.StreamEvents))
		}
	}
}
