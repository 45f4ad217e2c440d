package natstest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex/internal/natstest"
)

// TestClusterSurvivesTheLossOfTheStreamLeader starts a 3-node cluster,
// stores an R3 stream, stops the node that leads it, keeps publishing
// through the new leader, restarts the node on the same ports and store,
// and checks that it catches up with every message.
func TestClusterSurvivesTheLossOfTheStreamLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-servers")
	}
	c := natstest.NewCluster(t, 3)
	for i := range c.Size() {
		if s := c.Server(i); s == nil || !s.JetStreamIsClustered() {
			t.Fatalf("node %s is not a clustered JetStream server (%s)", c.Name(i), c.State())
		}
	}
	nc := c.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A JetStream API request can go unanswered while the cluster settles
	// (a meta leader change drops it): ask again, each try with its own
	// deadline. Creating a stream with the same config twice is not an error.
	var stream jetstream.Stream
	for {
		try, cancelTry := context.WithTimeout(ctx, 10*time.Second)
		stream, err = js.CreateStream(try, jetstream.StreamConfig{
			Name: "HARNESS", Subjects: []string{"harness.>"}, Storage: jetstream.FileStorage, Replicas: 3,
		})
		cancelTry()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create R3 stream: %v (%s)", err, c.State())
		}
		t.Logf("create R3 stream: %v; asking again (%s)", err, c.State())
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			// A publish may fail while a new leader is elected: retry it
			// (Nats-Msg-Id de-duplicates a publish that did land).
			for {
				_, err := js.Publish(ctx, "harness.x", []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprint("m", i)))
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("publish %d: %v (%s)", i, err, c.State())
				}
			}
		}
	}
	publish(0, 100)

	leader := c.WaitForStreamLeader(t, natstest.GlobalAccount, "HARNESS", 10*time.Second)
	c.Stop(leader)
	if c.Server(leader) != nil {
		t.Fatalf("Server(%d) after Stop is not nil", leader)
	}
	next := c.WaitForStreamLeader(t, natstest.GlobalAccount, "HARNESS", 30*time.Second)
	if next == leader {
		t.Fatalf("stream leader after stopping %s is still %s", c.Name(leader), c.Name(next))
	}
	publish(100, 200)

	c.Restart(leader)
	waitFor(t, 30*time.Second, "every replica of HARNESS to be current", func() bool {
		return c.StreamCurrent(natstest.GlobalAccount, "HARNESS")
	})
	// The leader's stream info lists the restarted node as a current peer.
	var info *jetstream.StreamInfo
	waitFor(t, 30*time.Second, "the stream leader to see "+c.Name(leader)+" current", func() bool {
		if info, err = stream.Info(ctx); err != nil || info.Cluster == nil {
			return false
		}
		if info.Cluster.Leader == c.Name(leader) {
			return true
		}
		for _, r := range info.Cluster.Replicas {
			if r.Name == c.Name(leader) {
				return r.Current && !r.Offline
			}
		}
		return false
	})
	if info.State.Msgs != 200 {
		t.Fatalf("stream has %d messages, want 200", info.State.Msgs)
	}
	if len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream cluster info %+v, want a leader and 2 replicas", info.Cluster)
	}

	// The restarted node serves clients on its old URL.
	direct, err := nats.Connect(c.ClientURL(leader))
	if err != nil {
		t.Fatalf("connect to restarted node %s: %v", c.ClientURL(leader), err)
	}
	defer direct.Close()
	if _, err := direct.Request("$JS.API.INFO", nil, 5*time.Second); err != nil {
		t.Fatalf("request through restarted node %s: %v", c.ClientURL(leader), err)
	}
}

// TestClusterIndexAndNames checks the harness's node lookups.
func TestClusterIndexAndNames(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-servers")
	}
	c := natstest.NewCluster(t, 3)
	for i := range c.Size() {
		if got := c.Index(c.Name(i)); got != i {
			t.Fatalf("Index(%q) = %d, want %d", c.Name(i), got, i)
		}
		if got, want := c.Server(i).Name(), c.Name(i); got != want {
			t.Fatalf("Server(%d).Name() = %q, want %q", i, got, want)
		}
	}
	if got := c.Index("nope"); got != -1 {
		t.Fatalf("Index(nope) = %d, want -1", got)
	}
	if c.MetaLeader() < 0 {
		t.Fatalf("no meta leader after NewCluster (%s)", c.State())
	}
	if got := c.StreamLeader(natstest.GlobalAccount, "NOSUCH"); got != -1 {
		t.Fatalf("StreamLeader(NOSUCH) = %d, want -1", got)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
