package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/internal/corpus"
	"memindex/internal/natstest"
	"memindex/node"
	"memindex/store"
)

const locomoDir = "../../../shared/eval-data/locomo"

// testNode starts a worker in-process on an embedded server on a random port.
func testNode(t *testing.T, partitions int) *node.Node {
	t.Helper()
	n, _ := testNodeIn(t, t.TempDir(), partitions)
	return n
}

// testNodeIn starts a worker on data directory dir; stop ends it (and is
// also called when the test ends).
func testNodeIn(t *testing.T, dir string, partitions int) (n *node.Node, stop func()) {
	t.Helper()
	cfg := testServeConfig(dir)
	cfg.PartitionCount = partitions
	return runTestNode(t, cfg, nil)
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	natstest.WaitUntil(t, d, what, cond)
}

func readLines(t *testing.T, path string, keep func([]byte) bool) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("LoCoMo data not available (%v); this test runs inside the memindex workplace", err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if keep(sc.Bytes()) {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out
}

// TestLoCoMoEndToEnd publishes one LoCoMo conversation through JetStream as
// the publish command does, waits until status shows it applied, and asks its
// questions over NATS: the gold message must be in the top 5.
func TestLoCoMoEndToEnd(t *testing.T) {
	const conv = `"sessionKey": "conv-26"`
	events := readLines(t, filepath.Join(locomoDir, "locomo10.events.jsonl"), func(b []byte) bool { return bytes.Contains(b, []byte(conv)) })
	queries := readLines(t, filepath.Join(locomoDir, "locomo10.queries.jsonl"), func(b []byte) bool { return bytes.Contains(b, []byte(conv)) })
	n := testNode(t, 4)
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, l := range events {
		m, err := client.LineMsg(l, "locomo", false)
		if err != nil {
			t.Fatalf("LineMsg: %v", err)
		}
		if _, err := js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	cl := client.NewClient(n.Conn())
	waitUntil(t, 60*time.Second, "status to show every message applied", func() bool {
		sts, err := cl.Status(ctx, 200*time.Millisecond)
		if err != nil || len(sts) != 1 {
			return false
		}
		t := sts[0].Total()
		return t.Messages == int64(len(events)) && t.VectorsWaiting == 0
	})

	type q struct {
		Question       string   `json:"question"`
		GoldMessageIDs []string `json:"goldMessageIds"`
		Category       int      `json:"category"`
	}
	hits, asked := 0, 0
	var first string
	for _, l := range queries {
		var qq q
		if err := json.Unmarshal(l, &qq); err != nil {
			t.Fatal(err)
		}
		if len(qq.GoldMessageIDs) == 0 || qq.Category == 5 {
			continue
		}
		asked++
		resp, err := cl.Search(ctx, memindex.SearchRequest{Namespace: "locomo", Query: qq.Question, K: 5, SessionKey: "conv-26"})
		if err != nil {
			t.Fatalf("Search(%q): %v", qq.Question, err)
		}
		if len(resp.Degraded) > 0 {
			t.Fatalf("Search(%q) degraded: %v", qq.Question, resp.Degraded)
		}
		found := false
		for _, h := range resp.Hits {
			for _, id := range h.MessageIDs {
				for _, g := range qq.GoldMessageIDs {
					found = found || id == g
				}
			}
		}
		if found {
			hits++
		}
		if first == "" {
			first = qq.Question
			if !found {
				t.Errorf("Search(%q): gold %v not in the top 5: %+v", qq.Question, qq.GoldMessageIDs, resp.Hits)
			}
		}
	}
	t.Logf("LoCoMo conv-26: gold message in the top 5 chunks for %d of %d questions (%.1f%%)", hits, asked, 100*float64(hits)/float64(asked))
	if hits*2 < asked {
		t.Fatalf("gold message in the top 5 for only %d of %d questions, want at least half", hits, asked)
	}
}

// builtBinary is one go build of memindex with some tags.
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

var (
	plainBinary     builtBinary // -tags sqlite_fts5
	failpointsBuild builtBinary // -tags sqlite_fts5,failpoints
)

// build builds memindex with tags once per test process (the environment's
// CGO and GOEXPERIMENT settings apply), with the race detector when the
// test binary has it, so a child's "DATA RACE" report (child.noPanic) can
// fire.
func (b *builtBinary) build(t *testing.T, tags string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "memindex-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "memindex")
		args := []string{"build", "-tags", tags, "-o", b.path}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build -tags %s: %v\n%s", tags, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// binary builds memindex once per test process.
func binary(t *testing.T) string { return plainBinary.build(t, "sqlite_fts5") }

// TestKillAndRestartIsExactlyOnce kills a child `memindex serve` with SIGKILL
// at random points while events stream in, restarts it each time, and checks
// that every shard ends with exactly the published messages and the chunks a
// clean run produces: nothing lost, nothing doubled.
func TestKillAndRestartIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child process")
	}
	bin := binary(t)
	srv := natstest.Server(t)
	nc := natstest.Connect(t, srv)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	const partitions = 4
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var logs bytes.Buffer
		cmd := exec.Command(bin, "serve", "--server", srv.ClientURL(), "--data", data, "--partition-count", fmt.Sprint(partitions),
			"--worker", "victim", "--batch", "200", "--dims", "64")
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &logs
	}

	// The events: 3 namespaces × 8 sessions × 150 messages.
	g := corpus.New(1)
	var sessions []faultSession
	var events []memindex.Event
	for i := range 24 {
		ref := store.SessionRef{Namespace: fmt.Sprintf("ns-%d", i%3), SessionKey: fmt.Sprintf("chat-%d", i), SessionID: "s1"}
		ms := g.Session(ref.SessionKey, ref.SessionID, 150)
		sessions = append(sessions, faultSession{ref, ms})
		for _, m := range ms {
			events = append(events, memindex.Event{Type: memindex.TypeMessage, Namespace: ref.Namespace, SessionKey: m.SessionKey,
				SessionID: m.SessionID, Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text, Timestamp: "2026-11-30T10:00:00Z"})
		}
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(events), func(i, j int) {
		// Keep each session in order but interleave sessions.
		if events[i].SessionKey != events[j].SessionKey {
			events[i], events[j] = events[j], events[i]
		}
	})

	// Publish in paced batches while the worker is killed and restarted.
	pubDone := make(chan error, 1)
	publish := func() {
		for i, e := range events {
			b, _ := json.Marshal(e)
			if _, err := js.PublishAsync(memindex.EventSubject(e.Namespace), b); err != nil {
				pubDone <- err
				return
			}
			if i%100 == 99 { // spread publishing over the kills
				<-js.PublishAsyncComplete()
				time.Sleep(300 * time.Millisecond)
			}
		}
		<-js.PublishAsyncComplete()
		pubDone <- nil
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	cl := client.NewClient(nc)
	applied := func() int64 {
		sts, err := cl.Status(context.Background(), time.Second)
		if err != nil || len(sts) == 0 {
			return -1
		}
		return sts[0].Total().Messages
	}
	midway := 0
	for kill := range 5 {
		cmd, logs := start()
		// Kill it a random while after it answers (a race-built worker
		// takes longer to start).
		waitUntil(t, 60*time.Second, fmt.Sprintf("worker %d to answer status", kill), func() bool { return applied() >= 0 })
		if kill == 0 {
			go publish() // once the first worker is up, so the kills land in the middle
		}
		time.Sleep(time.Duration(200+r.IntN(700)) * time.Millisecond)
		n := applied() // the worker goes on applying until the kill
		if n > 0 && n < int64(len(events)) {
			midway++
		}
		t.Logf("kill %d: %d of %d messages applied shortly before SIGKILL", kill, n, len(events))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", kill, err)
		}
		_ = cmd.Wait()
		if l := logs.String(); strings.Contains(l, "panic") || strings.Contains(l, "DATA RACE") {
			t.Fatalf("worker panicked or raced before kill %d:\n%s", kill, l)
		}
	}
	if err := <-pubDone; err != nil {
		t.Fatalf("publish: %v", err)
	}

	if midway == 0 {
		t.Fatal("no kill landed in the middle of ingest; the test proves nothing")
	}
	cmd, logs := start()
	waitUntil(t, 90*time.Second, "the restarted worker to apply every event", func() bool {
		sts, err := cl.Status(context.Background(), 200*time.Millisecond)
		if err != nil || len(sts) == 0 {
			return false
		}
		t := sts[0].Total()
		return t.Messages == int64(len(events)) && t.Pending == 0
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker exit after SIGTERM: %v\n%s", err, logs.String())
	}

	if l := logs.String(); strings.Contains(l, "DATA RACE") {
		t.Fatalf("worker raced:\n%s", l)
	}
	// Compare each shard with what a clean run produces: the oracle the
	// fault tests use (messages, chunk ids, no strays, chunks = FTS rows =
	// vectors, integrity checks).
	checkOracle(t, data, partitions, sessions)
}
