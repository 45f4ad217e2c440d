package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/internal/failpoint"
	"memindex/internal/natstest"
	"memindex/node"
	"memindex/store"
)

// TestSIGTERMMidBatchCommitsAndAcksOnce holds every batch of a child worker
// for 3 s after embedding (failpoint sleep), sends SIGTERM while a batch is
// held, and checks that the worker exits within a generous bound (its
// shutdown grace is 15 s), that the batch in hand was committed and
// acknowledged before exit (each consumer's ack floor is its shard's
// applied sequence), and that a restart finishes
// the stream with the oracle's exact content: nothing applied twice.
func TestSIGTERMMidBatchCommitsAndAcksOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a child process")
	}
	bin := failpointBinary(t)
	srv := natstest.Server(t)
	nc, js := natstest.ConnectJetStream(t, srv)
	const partitions = 2
	data := t.TempDir()
	sessions, events := faultCorpus(31, 2, 6, 60)
	c := startChild(t, bin, failpointEnv(failpoint.AfterEmbed+":1:sleep=3s"), childArgs(srv.ClientURL(), data, partitions)...)
	waitStream(t, js, c)
	publishAll(t, js, events, 0, 0)
	waitLog(t, c, "failpoint: after-embed hit 1: sleep", 60*time.Second)
	sent := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ws := c.wait(t, 45*time.Second); ws.ExitStatus() != 0 {
		t.Fatalf("worker exit after SIGTERM: %v\n%s", ws, c.logs.String())
	}
	t.Logf("worker exited %s after SIGTERM, mid-batch", time.Since(sent).Round(time.Millisecond))
	c.noPanic(t)

	var applied uint64
	for p := range partitions {
		seq := shardApplied(t, filepath.Join(data, "shards"), p)
		applied += seq
		info := partitionConsumer(t, js, p)
		// Messages fetched ahead of the batch in hand stay unacknowledged
		// (NumAckPending); they are above the floor and not applied.
		if info.AckFloor.Stream != seq {
			t.Fatalf("partition %d after SIGTERM: ack floor %d, want the shard's applied sequence %d:"+
				" the batch in hand was not acknowledged, or acknowledged without its commit", p, info.AckFloor.Stream, seq)
		}
	}
	if applied == 0 {
		t.Fatal("nothing applied before exit: the batch in hand was dropped, not finished")
	}
	w := startChild(t, bin, nil, childArgs(srv.ClientURL(), data, partitions)...)
	waitIndexed(t, nc, len(events), 90*time.Second, w)
	w.stop(t, 30*time.Second)
	checkOracle(t, data, partitions, sessions)
}

// partitionConsumer returns the info of the one durable consumer of
// partition p (its name depends on the worker and generation).
func partitionConsumer(t *testing.T, js jetstream.JetStream, p int) *jetstream.ConsumerInfo {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	var found []*jetstream.ConsumerInfo
	l := st.ListConsumers(ctx)
	for info := range l.Info() {
		if info.Config.FilterSubject == memindex.PartitionFilter(p) {
			found = append(found, info)
		}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("partition %d has %d consumers, want 1", p, len(found))
	}
	return found[0]
}

// waitLog polls c's log for s.
func waitLog(t *testing.T, c *child, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(c.logs.String(), s) {
		if c.exited() || time.Now().After(deadline) {
			t.Fatalf("worker log never said %q\n%s", s, c.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shardApplied reads partition p's applied sequence from its file.
func shardApplied(t *testing.T, dir string, p int) uint64 {
	t.Helper()
	sh, err := store.Open(context.Background(), node.ShardPath(dir, p), store.Config{Dims: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close(context.Background())
	seq, err := sh.AppliedSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// natsChild is a nats-server with JetStream in a child process (this test
// binary run as TestFaultHelperNATSServer), so a test can SIGKILL it; it
// keeps its port and store across restarts.
type natsChild struct {
	port int
	dir  string
	c    *child
}

func (n *natsChild) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

// startNATSChild starts the server on a free loopback port with its store in
// a temporary directory.
func startNATSChild(t *testing.T) *natsChild {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	n := &natsChild{port: port, dir: t.TempDir()}
	n.start(t)
	return n
}

func (n *natsChild) start(t *testing.T) {
	t.Helper()
	n.c = startChild(t, os.Args[0], []string{"FAULT_NATS_DIR=" + n.dir, "FAULT_NATS_PORT=" + strconv.Itoa(n.port)},
		"-test.run=^TestFaultHelperNATSServer$")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(n.c.logs.String(), "nats ready") {
		if n.c.exited() || time.Now().After(deadline) {
			t.Fatalf("nats-server child did not start on port %d\n%s", n.port, n.c.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFaultHelperNATSServer is not a test: it is the nats-server process
// of startNATSChild, run when FAULT_NATS_DIR is set. It fsyncs every write
// (sync_interval: always, as the deployments' cluster config), so a SIGKILL
// loses no acknowledged message.
func TestFaultHelperNATSServer(t *testing.T) {
	dir := os.Getenv("FAULT_NATS_DIR")
	if dir == "" {
		t.Skip("helper process of the NATS restart test")
	}
	port, _ := strconv.Atoi(os.Getenv("FAULT_NATS_PORT"))
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		SyncAlways: true, NoLog: true, NoSigs: true, MaxPayload: memindex.MaxEventBytes + 64<<10})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("not ready")
	}
	fmt.Println("nats ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	s.Shutdown()
	s.WaitForShutdown()
}

// TestNATSRestartAndKillDuringIngest runs the worker (a child) against a
// nats-server in another child, and while a publisher publishes with
// retries — recording which publishes the server acknowledged — shuts the
// server down and restarts it, then SIGKILLs it and restarts it, on the
// same port and store. The worker must reconnect by itself, and the index
// must hold exactly the acknowledged events: none missing, none twice.
func TestNATSRestartAndKillDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs child processes")
	}
	bin := failpointBinary(t)
	ns := startNATSChild(t)
	nc, err := nats.Connect(ns.url(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 2
	data := t.TempDir()
	sessions, events := faultCorpus(41, 2, 10, 100)
	w := startChild(t, bin, nil, childArgs(ns.url(), data, partitions)...)
	waitStream(t, js, w)

	var mu sync.Mutex
	acked := 0
	pubDone := make(chan error, 1)
	go func() {
		for i, e := range events {
			b, _ := json.Marshal(e)
			for attempt := 0; ; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := js.Publish(ctx, memindex.EventSubject(e.Namespace), b, jetstream.WithMsgID(msgID(e)))
				cancel()
				if err == nil {
					break
				}
				if attempt > 600 {
					pubDone <- fmt.Errorf("publish %d: %w", i, err)
					return
				}
				time.Sleep(50 * time.Millisecond) // retry pacing while the server is down
			}
			mu.Lock()
			acked++
			mu.Unlock()
		}
		pubDone <- nil
	}()
	progress := func() int { mu.Lock(); defer mu.Unlock(); return acked }
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for progress() < n {
			if time.Now().After(deadline) {
				t.Fatalf("publisher stuck at %d acknowledged events", progress())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(len(events) / 4)
	// A clean shutdown and restart.
	ns.c.stop(t, 30*time.Second)
	ns.start(t)
	waitFor(len(events) / 2)
	// A kill and restart.
	if err := ns.c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ns.c.wait(t, 10*time.Second)
	ns.start(t)
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}
	if w.exited() {
		t.Fatalf("the worker exited while the server restarted\n%s", w.logs.String())
	}
	waitIndexed(t, nc, progress(), 120*time.Second, w)
	w.stop(t, 30*time.Second)
	checkOracle(t, data, partitions, sessions)
}

// tcpProxy forwards loopback TCP connections to a target until cut: Cut
// closes every connection and refuses new ones until Heal.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	done := make(chan struct{})
	go func() { defer close(done); p.serve() }()
	t.Cleanup(func() { ln.Close(); <-done; p.Cut() })
	return p
}

func (p *tcpProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		// The pipes end when either side closes (Cut closes both).
		go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, s); s.Close(); c.Close() }()
	}
}

// Cut closes every proxied connection and refuses new ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Heal accepts connections again.
func (p *tcpProxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// TestConnectionCutLongerThanAckWait puts a TCP proxy between a child worker
// and the server, lowers the consumers' ack wait to 1 s, cuts the worker's
// connections for 3 s while events stream in (so what it had fetched and
// not yet acknowledged is due for redelivery), heals, and checks that the
// lag returns to zero and the shards equal the oracle: no duplicate rows.
func TestConnectionCutLongerThanAckWait(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a child process")
	}
	bin := failpointBinary(t)
	srv := natstest.Server(t)
	nc, js := natstest.ConnectJetStream(t, srv)
	px := newTCPProxy(t, srv.Addr().String())
	const partitions = 2
	data := t.TempDir()
	sessions, events := faultCorpus(51, 2, 10, 80)
	w := startChild(t, bin, nil, childArgs(px.url(), data, partitions)...)
	waitStream(t, js, w)
	half := len(events) / 2
	publishAll(t, js, events[:half], 0, 0)
	waitIndexed(t, nc, half, 90*time.Second, w)

	// The worker sets a 2-minute ack wait; lower it on the live consumers.
	ctx := context.Background()
	for p := range partitions {
		info := partitionConsumer(t, js, p)
		cfg := info.Config
		cfg.AckWait = time.Second
		if _, err := js.UpdateConsumer(ctx, memindex.StreamEvents, cfg); err != nil {
			t.Fatalf("lower the ack wait of %s: %v", cfg.Durable, err)
		}
	}
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); publishAll(t, js, events[half:], 40, 20*time.Millisecond) }()
	time.Sleep(200 * time.Millisecond) // let some events be fetched before the cut
	px.Cut()
	time.Sleep(3 * time.Second) // the fault's length: three ack waits
	px.Heal()
	<-pubDone
	waitIndexed(t, nc, len(events), 120*time.Second, w)
	if tot, _ := statusTotal(nc); tot.Pending != 0 {
		t.Fatalf("lag after healing: %d pending, want 0", tot.Pending)
	}
	redelivered := 0
	for p := range partitions {
		redelivered += partitionConsumer(t, js, p).NumRedelivered
	}
	t.Logf("consumers report %d redelivered messages after the cut", redelivered)
	if w.exited() {
		t.Fatalf("the worker exited during the cut\n%s", w.logs.String())
	}
	w.stop(t, 30*time.Second)
	checkOracle(t, data, partitions, sessions)
}

// TestDiskFullNoAckNotReadyThenResumes runs a child worker whose files may
// not grow past a limit (RLIMIT_FSIZE via prlimit, set a little above the
// files' size after a first run), so its commits fail once the write-ahead
// log reaches it. It checks that no failed commit is acknowledged (each
// consumer's ack floor stays at or below its shard's applied sequence, the
// rest of the events stay pending), that /readyz says not ready and why
// and status names the error, that SIGTERM still ends the worker, that
// PRAGMA integrity_check and FTS5's integrity-check pass, and that after
// the limit is lifted (a restart without it) ingest resumes and the shards
// equal the oracle.
func TestDiskFullNoAckNotReadyThenResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a child process")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	bin := failpointBinary(t)
	srv := natstest.Server(t)
	nc, js := natstest.ConnectJetStream(t, srv)
	const partitions = 2
	data := t.TempDir()
	sessions, events := faultCorpus(61, 2, 10, 90)
	// A fifth first: the rest must write more than the largest file and
	// the margin over again before a commit fails (the checkpoints fail
	// first, then the WAL grows to the limit), whatever the batch sizes.
	fifth := len(events) / 5
	w := startChild(t, bin, nil, childArgs(srv.ClientURL(), data, partitions)...)
	waitStream(t, js, w)
	publishAll(t, js, events[:fifth], 0, 0)
	waitIndexed(t, nc, fifth, 90*time.Second, w)
	w.stop(t, 30*time.Second)

	largest := largestFile(t, data)
	limit := largest + 128<<10
	t.Logf("largest file after the first fifth: %d bytes; limit %d", largest, limit)
	httpAddr := freeAddr(t)
	args := append([]string{"--fsize=" + strconv.FormatInt(limit, 10), "--", bin}, childArgs(srv.ClientURL(), data, partitions, "--http", httpAddr)...)
	full := startChild(t, prlimit, nil, args...)
	publishAll(t, js, events[fifth:], 0, 0)
	// Not ready, in words, on /readyz.
	var why string
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := getBody("http://" + httpAddr + "/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "fail to commit") {
			why = body
			break
		}
		if full.exited() || time.Now().After(deadline) {
			t.Fatalf("/readyz never said that commits fail (last %d %s)\n%s", code, body, full.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("/readyz while the disk is full: %s", strings.TrimSpace(why))
	sts, err := client.NewClient(nc).Status(context.Background(), time.Second)
	if err != nil || len(sts) == 0 {
		t.Fatalf("status while the disk is full: %v", err)
	}
	errs := 0
	for _, ps := range sts[0].Partitions {
		if ps.Error != "" {
			errs++
		}
	}
	if errs == 0 || sts[0].Total().Messages >= int64(len(events)) {
		t.Fatalf("status while the disk is full: %+v; want a partition error and not every message applied", sts[0].Partitions)
	}
	// No acknowledgement past what committed.
	for p := range partitions {
		applied := readApplied(t, node.ShardPath(filepath.Join(data, "shards"), p))
		if info := partitionConsumer(t, js, p); info.AckFloor.Stream > applied {
			t.Fatalf("partition %d: ack floor %d beyond the applied sequence %d: a failed commit was acknowledged", p, info.AckFloor.Stream, applied)
		}
	}
	full.stop(t, 45*time.Second)
	for p := range partitions {
		if err := store.CheckFile(context.Background(), node.ShardPath(filepath.Join(data, "shards"), p), store.CheckFileConfig{}); err != nil {
			t.Fatalf("after the disk was full: %v", err)
		}
	}

	w = startChild(t, bin, nil, childArgs(srv.ClientURL(), data, partitions)...)
	waitIndexed(t, nc, len(events), 120*time.Second, w)
	w.stop(t, 30*time.Second)
	checkOracle(t, data, partitions, sessions)
}

// largestFile returns the size of the largest file under dir.
func largestFile(t *testing.T, dir string) int64 {
	t.Helper()
	var max int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Size() > max {
			max = info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return max
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// getBody GETs url and returns the status code and body (0 on error).
func getBody(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readApplied reads a shard file's applied sequence read-only, while a
// worker may hold it.
func readApplied(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'applied_seq'`).Scan(&v); err != nil {
		t.Fatalf("applied seq of %s: %v", path, err)
	}
	return uint64(v)
}

// walBound is the most a shard's write-ahead log may reach: the
// journal_size_limit the store sets (64 MiB) plus one autocheckpoint
// interval (1,000 pages of 4 KiB) of slack.
const walBound = 64<<20 + 1000*4096

// TestSearchesDuringFullSpeedIngest runs searches at a steady rate (four
// searchers, one request each 20 ms) against a child worker while events
// are published as fast as the server takes them, for 10 s (60 s with
// MEMINDEX_LONG=1). No search may fail (no SQLITE_BUSY, nor anything else),
// the worker's log must not mention a busy or locked database, every
// shard's WAL must stay under walBound, and the shards must end equal to
// the oracle.
func TestSearchesDuringFullSpeedIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a child process")
	}
	run, perSession := 10*time.Second, 120
	if longFaults() {
		run, perSession = 60*time.Second, 400
	}
	bin := failpointBinary(t)
	srv := natstest.Server(t)
	nc, js := natstest.ConnectJetStream(t, srv, jetstream.WithPublishAsyncMaxPending(1024))
	const partitions = 2
	data := t.TempDir()
	sessions, events := faultCorpus(71, 4, 40, perSession)
	w := startChild(t, bin, nil, childArgs(srv.ClientURL(), data, partitions, "--batch", "200")...)
	waitStream(t, js, w)
	publishAll(t, js, events[:200], 0, 0)
	waitIndexed(t, nc, 200, 60*time.Second, w)

	stop := make(chan struct{})
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); publishAll(t, js, events[200:], 0, 0) }()
	var mu sync.Mutex
	var searches, failures int
	var firstErr error
	var wg sync.WaitGroup
	cl := client.NewClient(nc)
	queries := []string{"what did they say about the trip", "dinner plans", "the new job", "music and books"}
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := cl.Search(ctx, memindex.SearchRequest{Namespace: fmt.Sprintf("ns-%d", (i+n)%4), Query: queries[n%len(queries)], K: 10})
				cancel()
				mu.Lock()
				searches++
				if err != nil {
					failures++
					if firstErr == nil {
						firstErr = err
					}
				}
				mu.Unlock()
			}
		}()
	}
	var maxWAL int64
	end := time.Now().Add(run)
	for time.Now().Before(end) {
		for p := range partitions {
			if fi, err := os.Stat(node.ShardPath(filepath.Join(data, "shards"), p) + "-wal"); err == nil && fi.Size() > maxWAL {
				maxWAL = fi.Size()
			}
		}
		time.Sleep(100 * time.Millisecond) // the WAL sampling interval
	}
	close(stop)
	wg.Wait()
	ingested, _ := statusTotal(nc)
	<-pubDone
	t.Logf("%s: %d searches, %d failed; %d of %d messages applied meanwhile; largest WAL %d KiB",
		run, searches, failures, ingested.Messages, len(events), maxWAL>>10)
	if failures > 0 {
		t.Fatalf("%d of %d searches failed during ingest; first: %v", failures, searches, firstErr)
	}
	if searches < 100 {
		t.Fatalf("only %d searches ran in %s; the test proves little", searches, run)
	}
	if maxWAL > walBound {
		t.Fatalf("a shard's WAL reached %d bytes, over the %d bound", maxWAL, walBound)
	}
	waitIndexed(t, nc, len(events), 5*time.Minute, w)
	w.stop(t, 30*time.Second)
	for _, bad := range []string{"SQLITE_BUSY", "database is locked", "database table is locked"} {
		if strings.Contains(w.logs.String(), bad) {
			t.Fatalf("the worker's log mentions %q:\n%s", bad, w.logs.String())
		}
	}
	checkOracle(t, data, partitions, sessions)
}
