package main

// Machinery of the crash and fault tests (crash_test.go, fault_test.go):
// a memindex binary built with failpoints, child workers, a synthetic
// corpus, publishing, and the oracle every test compares the shards with.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/chunker"
	"memindex/client"
	"memindex/internal/corpus"
	"memindex/internal/failpoint"
	"memindex/node"
	"memindex/store"
)

// longFaults says whether the long fault runs are asked for (make
// test-long sets MEMINDEX_LONG=1): 20,000 events, 10 kills, a minute of
// searches. Otherwise the CI-sized versions run.
func longFaults() bool { return os.Getenv("MEMINDEX_LONG") == "1" }

// failpointBinary builds memindex with the failpoints tag once per test
// process.
func failpointBinary(t *testing.T) string { return failpointsBuild.build(t, "sqlite_fts5,failpoints") }

// child is a `memindex serve` process.
type child struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{} // closed when it exited; then err is its Wait error
	err  error
}

// childArgs are the serve flags of a child worker on server url and data
// directory dir with P partitions; extra flags follow.
func childArgs(url, dir string, partitions int, extra ...string) []string {
	return append([]string{"serve", "--server", url, "--data", dir, "--partition-count", fmt.Sprint(partitions),
		"--worker", "victim", "--batch", "50", "--dims", "64", "--http", "off", "--snapshot-interval", "0"}, extra...)
}

// startChild starts bin with args and env (added to this process's); the
// child is killed when the test ends if it still runs.
func startChild(t *testing.T, bin string, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), logs: &syncBuffer{}, done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the child to exit and returns how it ended.
func (c *child) wait(t *testing.T, d time.Duration) syscall.WaitStatus {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		t.Fatalf("child still running after %s\n%s", d, c.logs.String())
	}
	return c.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// stop sends SIGTERM and expects a clean exit within d.
func (c *child) stop(t *testing.T, d time.Duration) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	if ws := c.wait(t, d); ws.ExitStatus() != 0 {
		t.Fatalf("worker exit after SIGTERM: %v\n%s", ws, c.logs.String())
	}
	c.noPanic(t)
}

func (c *child) noPanic(t *testing.T) {
	t.Helper()
	if l := c.logs.String(); strings.Contains(l, "panic:") || strings.Contains(l, "DATA RACE") {
		t.Fatalf("worker panicked or raced:\n%s", l)
	}
}

// faultSession is one published session: the oracle's input.
type faultSession struct {
	ref  store.SessionRef
	msgs []corpus.Message
}

// faultCorpus makes sessions×perSession messages over ns namespaces and the
// events publishing them, sessions interleaved and each in order.
func faultCorpus(seed uint64, ns, sessions, perSession int) ([]faultSession, []memindex.Event) {
	g := corpus.New(seed)
	var out []faultSession
	var queues [][]memindex.Event
	for i := range sessions {
		ref := store.SessionRef{Namespace: fmt.Sprintf("ns-%d", i%ns), SessionKey: fmt.Sprintf("chat-%d", i), SessionID: "s1"}
		ms := g.Session(ref.SessionKey, ref.SessionID, perSession)
		out = append(out, faultSession{ref, ms})
		var q []memindex.Event
		for _, m := range ms {
			q = append(q, memindex.Event{Type: memindex.TypeMessage, Namespace: ref.Namespace, SessionKey: m.SessionKey,
				SessionID: m.SessionID, Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text, Timestamp: "2026-11-30T10:00:00Z"})
		}
		queues = append(queues, q)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	var events []memindex.Event
	for len(queues) > 0 {
		i := r.IntN(len(queues))
		events = append(events, queues[i][0])
		if queues[i] = queues[i][1:]; len(queues[i]) == 0 {
			queues = append(queues[:i], queues[i+1:]...)
		}
	}
	return out, events
}

// msgID is an event's Nats-Msg-Id: publishing it again within the
// stream's duplicate window stores nothing.
func msgID(e memindex.Event) string {
	return e.Namespace + "/" + e.SessionKey + "/" + e.SessionID + "/" + fmt.Sprint(e.Seq)
}

// publishAll publishes events asynchronously, pausing every `every` events
// for pause (0: no pause), and fails the test on any error.
func publishAll(t *testing.T, js jetstream.JetStream, events []memindex.Event, every int, pause time.Duration) {
	t.Helper()
	for i, e := range events {
		b, _ := json.Marshal(e)
		if _, err := js.PublishAsync(memindex.EventSubject(e.Namespace), b, jetstream.WithMsgID(msgID(e))); err != nil {
			t.Errorf("publish %d: %v", i, err)
			return
		}
		if i%256 == 255 { // keep under the async publisher's pending limit
			<-js.PublishAsyncComplete()
		}
		if every > 0 && i%every == every-1 {
			<-js.PublishAsyncComplete()
			time.Sleep(pause) // pacing the publisher, not waiting for a condition
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		t.Errorf("publish: %d acknowledgements missing after 60s", js.PublishAsyncPending())
	}
}

// statusTotal returns the summed partition status of the first worker that
// answers, and whether one did.
func statusTotal(nc *nats.Conn) (memindex.PartitionStatus, bool) {
	sts, err := client.NewClient(nc).Status(context.Background(), 300*time.Millisecond)
	if err != nil || len(sts) == 0 {
		return memindex.PartitionStatus{}, false
	}
	return sts[0].Total(), true
}

// waitIndexed polls status until the worker holds want messages, nothing
// is pending or unacknowledged, and no chunk waits for a vector.
func waitIndexed(t *testing.T, nc *nats.Conn, want int, d time.Duration, c *child) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last memindex.PartitionStatus
	for {
		tot, ok := statusTotal(nc)
		if ok {
			last = tot
			if tot.Messages == int64(want) && tot.Pending == 0 && tot.AckPending == 0 && tot.VectorsWaiting == 0 {
				return
			}
		}
		if t.Failed() { // a publisher goroutine failed: the count will never come
			t.FailNow()
		}
		if c != nil && c.exited() {
			t.Fatalf("worker exited while waiting for %d messages (last status %+v)\n%s", want, last, c.logs.String())
		}
		if time.Now().After(deadline) {
			logs := ""
			if c != nil {
				logs = c.logs.String()
			}
			t.Fatalf("after %s the worker holds %d of %d messages (status %+v)\n%s", d, last.Messages, want, last, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkOracle checks the shards under data (the worker stopped) against
// the oracle: every session holds exactly its published messages and the
// chunk ids chunker.Session computes from them with the serve defaults;
// no other chunk exists; chunks, FTS rows and vectors agree in number;
// PRAGMA integrity_check, FTS5's integrity-check and Shard.Check pass.
func checkOracle(t *testing.T, data string, partitions int, sessions []faultSession) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(data, "shards")
	for p := range partitions {
		if err := store.CheckFile(ctx, node.ShardPath(dir, p), store.CheckFileConfig{}); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	opened := map[int]*store.Shard{}
	for p := range partitions {
		sh, err := store.Open(ctx, node.ShardPath(dir, p), store.Config{Dims: 64})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sh.Close(ctx) })
		opened[p] = sh
	}
	wantChunks := map[int]int64{}
	for _, s := range sessions {
		p := memindex.Partition(s.ref.Namespace, partitions)
		sh := opened[p]
		cms := make([]chunker.Message, len(s.msgs))
		for i, m := range s.msgs {
			cms[i] = chunker.Message{Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text, Time: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
		}
		want := chunker.Session(chunker.Config{BudgetTokens: node.DefaultChunkTokens}, s.ref.Namespace+"\x00"+s.ref.SessionKey+"\x00"+s.ref.SessionID, cms)
		wantChunks[p] += int64(len(want))
		got, err := sh.SessionChunkSpans(ctx, s.ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d chunks, want %d", s.ref, len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID {
				t.Fatalf("%v chunk %d: id %s, want %s", s.ref, i, got[i].ID, want[i].ID)
			}
		}
		stored, err := sh.SessionMessages(ctx, s.ref, 1, 0)
		if err != nil || len(stored) != len(s.msgs) {
			t.Fatalf("%v: %d messages stored (%v), want %d", s.ref, len(stored), err, len(s.msgs))
		}
		for i, m := range stored {
			if m.Seq != s.msgs[i].Seq {
				t.Fatalf("%v: message %d has seq %d, want %d", s.ref, i, m.Seq, s.msgs[i].Seq)
			}
		}
	}
	for p, sh := range opened {
		st, err := sh.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Chunks != wantChunks[p] {
			t.Fatalf("partition %d: %d chunks stored, want %d (duplicates or strays)", p, st.Chunks, wantChunks[p])
		}
		if st.VectorsWaiting != 0 {
			t.Fatalf("partition %d: %d chunks wait for a vector, want 0", p, st.VectorsWaiting)
		}
		if err := sh.Check(ctx); err != nil { // vectors flagged = vector rows = in-memory index
			t.Fatalf("partition %d: %v", p, err)
		}
		if fts := ftsDocs(t, node.ShardPath(dir, p)); fts != st.Chunks {
			t.Fatalf("partition %d: %d FTS rows, %d chunks", p, fts, st.Chunks)
		}
	}
}

// ftsDocs counts the documents in a shard file's FTS5 index.
func ftsDocs(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM chunks_fts_docsize`).Scan(&n); err != nil {
		t.Fatalf("count FTS rows of %s: %v", path, err)
	}
	return n
}

// failpointEnv arms spec in a child.
func failpointEnv(spec string) []string { return []string{failpoint.EnvVar + "=" + spec} }
