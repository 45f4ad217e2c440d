package main

import (
	"context"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/internal/failpoint"
	"memindex/internal/natstest"
)

// TestCrashAtEachFailpoint kills a child worker (SIGKILL, from inside, at
// the 3rd hit) in each crash window of ingest — after embedding and before
// the transaction, inside the transaction after the batch's rows, after the
// commit and before the ack — then restarts it without the failpoint: the
// shards must equal the oracle, with no duplicate, every table agreeing and
// SQLite's and FTS5's integrity checks passing.
func TestCrashAtEachFailpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child process")
	}
	bin := failpointBinary(t)
	for _, point := range []string{failpoint.AfterEmbed, failpoint.MidTx, failpoint.AfterCommit} {
		t.Run(point, func(t *testing.T) {
			srv := natstest.Server(t)
			nc, js := natstest.ConnectJetStream(t, srv)
			const partitions = 2
			data := t.TempDir()
			sessions, events := faultCorpus(11, 2, 8, 60)
			victim := startChild(t, bin, failpointEnv(point+":3"), childArgs(srv.ClientURL(), data, partitions)...)
			waitStream(t, js, victim)
			publishAll(t, js, events, 0, 0)
			ws := victim.wait(t, 60*time.Second)
			if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("worker ended with %v, want killed by SIGKILL at failpoint %s\n%s", ws, point, victim.logs.String())
			}
			if want := "failpoint: " + point + " hit 3: SIGKILL"; !strings.Contains(victim.logs.String(), want) {
				t.Fatalf("worker log lacks %q\n%s", want, victim.logs.String())
			}
			victim.noPanic(t)

			w := startChild(t, bin, nil, childArgs(srv.ClientURL(), data, partitions)...)
			waitIndexed(t, nc, len(events), 90*time.Second, w)
			w.stop(t, 30*time.Second)
			checkOracle(t, data, partitions, sessions)
		})
	}
}

// waitStream polls until the worker created the event stream.
func waitStream(t *testing.T, js jetstream.JetStream, c *child) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := js.Stream(context.Background(), memindex.StreamEvents); err == nil {
			return
		}
		if c.exited() || time.Now().After(deadline) {
			t.Fatalf("no stream %s from the worker\n%s", memindex.StreamEvents, c.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLongRandomKills (make test-long: MEMINDEX_LONG=1) SIGKILLs a child
// worker at 10 random moments while 20,000 events of 200 sessions are
// published, restarts it each time, and compares the shards with the
// oracle. The CI-sized run is TestKillAndRestartIsExactlyOnce.
func TestLongRandomKills(t *testing.T) {
	if !longFaults() {
		t.Skip("set MEMINDEX_LONG=1 (make test-long): 20,000 events, 10 SIGKILLs")
	}
	bin := failpointBinary(t)
	srv := natstest.Server(t)
	nc, js := natstest.ConnectJetStream(t, srv, jetstream.WithPublishAsyncMaxPending(1024))
	const partitions = 4
	data := t.TempDir()
	sessions, events := faultCorpus(21, 5, 200, 100)
	args := childArgs(srv.ClientURL(), data, partitions, "--batch", "200")

	first := startChild(t, bin, nil, args...)
	waitStream(t, js, first)
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); publishAll(t, js, events, 500, 150*time.Millisecond) }()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	midway := 0
	victim := first
	for kill := range 10 {
		if kill > 0 {
			victim = startChild(t, bin, nil, args...)
		}
		time.Sleep(time.Duration(500+r.IntN(1500)) * time.Millisecond) // a random moment, not a wait for a condition
		tot, _ := statusTotal(nc)
		if tot.Messages > 0 && tot.Messages < int64(len(events)) {
			midway++
		}
		t.Logf("kill %d: %d of %d messages applied shortly before SIGKILL", kill, tot.Messages, len(events))
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", kill, err)
		}
		victim.wait(t, 30*time.Second)
		victim.noPanic(t)
	}
	<-pubDone
	if midway < 5 {
		t.Fatalf("only %d of 10 kills landed in the middle of ingest; the test proves too little", midway)
	}
	w := startChild(t, bin, nil, args...)
	waitIndexed(t, nc, len(events), 5*time.Minute, w)
	w.stop(t, 30*time.Second)
	checkOracle(t, data, partitions, sessions)
}

// TestDefaultBuildHasNoFailpoints checks that a binary built as make build
// builds it (without the failpoints tag) ignores an armed failpoint.
func TestDefaultBuildHasNoFailpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a child process")
	}
	bin := binary(t)
	srv := natstest.Server(t)
	nc, js := natstest.ConnectJetStream(t, srv)
	data := t.TempDir()
	sessions, events := faultCorpus(5, 1, 4, 40)
	c := startChild(t, bin, failpointEnv(failpoint.AfterEmbed+":1"), childArgs(srv.ClientURL(), data, 2)...)
	waitStream(t, js, c)
	publishAll(t, js, events, 0, 0)
	waitIndexed(t, nc, len(events), 60*time.Second, c)
	c.stop(t, 30*time.Second)
	if strings.Contains(c.logs.String(), "failpoint:") {
		t.Fatalf("a default build fired a failpoint:\n%s", c.logs.String())
	}
	checkOracle(t, data, 2, sessions)
}
