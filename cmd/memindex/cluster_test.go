package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/internal/natstest"
)

// The cluster test's shape. clusterLong (MEMINDEX_LONG=1) publishes a
// bigger corpus and runs two rounds of faults.
const (
	clusterPartitions = 8
	clusterGroup      = "g"
	clusterLeaseTTL   = 2 * time.Second
)

type clusterShape struct {
	namespaces, sessions, messages int // per namespace, per session
	rounds                         int // each: kill a worker, stop the stream leader node
}

func clusterShapeFor(long bool) clusterShape {
	if long {
		return clusterShape{namespaces: 200, sessions: 10, messages: 5, rounds: 2}
	}
	return clusterShape{namespaces: 48, sessions: 5, messages: 4, rounds: 1}
}

// clusterWorker is one `memindex serve` child process of the group.
type clusterWorker struct {
	name, data string
	cmd        *exec.Cmd
	logs       *syncBuffer
	done       chan struct{}
}

func (w *clusterWorker) start(t *testing.T, bin, urls string) {
	t.Helper()
	logs := &syncBuffer{}
	w.logs = logs
	// Children are race-built under -race (builtBinary): any report from
	// this run of the worker fails the test.
	t.Cleanup(func() {
		if l := logs.String(); strings.Contains(l, "DATA RACE") || strings.Contains(l, "panic:") {
			t.Errorf("worker %s panicked or raced:\n%s", w.name, l)
		}
	})
	w.cmd = exec.Command(bin, "serve", "--server", urls, "--group", clusterGroup, "--worker", w.name, "--data", w.data,
		"--partition-count", fmt.Sprint(clusterPartitions), "--stream-replicas", "3", "--lease-ttl", clusterLeaseTTL.String(),
		"--dims", "64", "--batch", "200", "--chunk-tokens", "400", "--http", "off", "--log-level", "debug")
	w.cmd.Stdout, w.cmd.Stderr = w.logs, w.logs
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", w.name, err)
	}
	w.done = make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(w.done) }() // reaped here; kill and stop wait on done
}

func (w *clusterWorker) running() bool {
	if w.done == nil {
		return false
	}
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// kill ends the worker with SIGKILL: no hand-over, its leases expire.
func (w *clusterWorker) kill(t *testing.T) {
	t.Helper()
	if !w.running() {
		return
	}
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %s: %v", w.name, err)
	}
	<-w.done
}

func (w *clusterWorker) tail() string {
	s := w.logs.String()
	if len(s) > 6000 {
		s = "…" + s[len(s)-6000:]
	}
	return s
}

// clusterEvent is one published message and the token only it contains.
type clusterEvent struct {
	ev    memindex.Event
	token string
}

// clusterCorpus builds namespaces × sessions × messages events. Every
// message carries its namespace as "[ns]" (a hit of another namespace is
// seen at once) and a token no other message has. A session of a few
// short messages fits one chunk (--chunk-tokens 400), so a token's search
// has exactly one hit once the session is indexed. Sessions are
// interleaved at random, each in order.
func clusterCorpus(shape clusterShape) []clusterEvent {
	var sessions [][]clusterEvent
	for n := range shape.namespaces {
		ns := fmt.Sprintf("tenant-%03d", n)
		for s := range shape.sessions {
			var sess []clusterEvent
			for m := range shape.messages {
				token := fmt.Sprintf("zq%03dq%02dq%02d", n, s, m)
				sess = append(sess, clusterEvent{token: token, ev: memindex.Event{
					Type: memindex.TypeMessage, Namespace: ns, SessionKey: fmt.Sprintf("chat-%02d", s), SessionID: "s1",
					Seq: int64(m + 1), ID: fmt.Sprintf("%s-%d-%d", ns, s, m), Role: "user", Speaker: "Ana",
					Text:      fmt.Sprintf("[%s] Ana noted %s about the garden and the trip", ns, token),
					Timestamp: "2026-11-30T10:00:00Z",
				}})
			}
			sessions = append(sessions, sess)
		}
	}
	r := rand.New(rand.NewPCG(7, 9))
	var out []clusterEvent
	for len(sessions) > 0 {
		i := r.IntN(len(sessions))
		out = append(out, sessions[i][0])
		if sessions[i] = sessions[i][1:]; len(sessions[i]) == 0 {
			sessions = append(sessions[:i], sessions[i+1:]...)
		}
	}
	return out
}

// searchLog counts the outcomes of the searches issued while the cluster
// ingests and fails over. A transport error (timeout, no responders) is
// allowed while a fault is in progress (a worker killed, a NATS node
// stopped); a 503 "not ready" anytime, hand-overs included (a holder that
// drops a partition drains its subscriptions, so a request already routed
// to it is answered 503, not dropped); any other error, and any wrong
// result, never.
type searchLog struct {
	mu                  sync.Mutex
	ok, hits, notReady  int
	transport, disallow int
	wrong               []string
	other               []string
	outside             []string // transport errors outside a fault window
	disrupted           atomic.Bool
	// faultEnded is when the last fault window closed (unix ns): a search
	// started before it belongs to the fault, however late it fails.
	faultEnded atomic.Int64
}

// fault opens (true) or closes (false) a fault window.
func (l *searchLog) fault(on bool) {
	if !on {
		l.faultEnded.Store(time.Now().UnixNano())
	}
	l.disrupted.Store(on)
}

// inFault reports whether a search started at started overlapped a fault
// window.
func (l *searchLog) inFault(started time.Time) bool {
	return l.disrupted.Load() || started.UnixNano() <= l.faultEnded.Load()
}

func (l *searchLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d answered (%d with the token), %d not ready (503), %d transport errors during faults, %d transport errors outside faults, %d other errors, %d wrong results",
		l.ok, l.hits, l.notReady, l.transport, l.disallow, len(l.other), len(l.wrong))
}

// check classifies one search of token (published in ns, or in another
// namespace when foreign) asked of namespace ns.
func (l *searchLog) check(ns, token string, foreign bool, started time.Time, resp memindex.SearchResponse, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rerr *client.RemoteError
	switch {
	case errors.As(err, &rerr) && rerr.Code == memindex.CodeUnavailable:
		if rerr.Message == "" {
			l.other = append(l.other, "a 503 without a message")
		}
		l.notReady++
		return
	case err != nil && isTransportError(err):
		if l.inFault(started) {
			l.transport++
		} else {
			l.disallow++
			l.outside = append(l.outside, fmt.Sprintf("%v (started %s after the last fault window closed)", err, started.Sub(time.Unix(0, l.faultEnded.Load())).Round(time.Millisecond)))
		}
		return
	case err != nil:
		l.other = append(l.other, err.Error())
		return
	}
	l.ok++
	if resp.Namespace != ns {
		l.wrong = append(l.wrong, fmt.Sprintf("search of %s answered for namespace %q", ns, resp.Namespace))
	}
	withToken := 0
	for _, h := range resp.Hits {
		if !strings.Contains(h.Text, "["+ns+"]") {
			l.wrong = append(l.wrong, fmt.Sprintf("search of %s returned a chunk of another namespace: %q", ns, h.Text))
		}
		if strings.Contains(h.Text, token) {
			withToken++
		}
	}
	switch {
	case foreign && withToken > 0:
		l.wrong = append(l.wrong, fmt.Sprintf("search of %s found %s, a token of another namespace", ns, token))
	case withToken > 1:
		l.wrong = append(l.wrong, fmt.Sprintf("search of %s found %s in %d chunks, want one", ns, token, withToken))
	case withToken == 1:
		l.hits++
	}
}

func isTransportError(err error) bool {
	for _, e := range []error{nats.ErrTimeout, context.DeadlineExceeded, nats.ErrNoResponders, client.ErrNoWorker,
		nats.ErrConnectionClosed, nats.ErrConnectionReconnecting, nats.ErrDisconnected} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// routedSearch sends req as `nats req memindex.search.<ns>` does, to
// whichever worker of the queue group receives it.
func routedSearch(ctx context.Context, nc *nats.Conn, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	var resp memindex.SearchResponse
	data, _ := json.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, memindex.SearchSubject(req.Namespace), data)
	if err != nil {
		return resp, err
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		return resp, &client.RemoteError{Code: code, Message: msg.Header.Get("Nats-Service-Error")}
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return resp, fmt.Errorf("decode search response: %w", err)
	}
	return resp, nil
}

// TestClusterEndToEnd is issue 5's cluster test: a 3-node JetStream cluster
// in this process, the event stream R3, three `memindex serve --group`
// workers as child processes. It publishes a corpus over many namespaces
// while searches run from a client, SIGKILLs one worker mid-ingest (its
// partitions move to the others after the lease TTL and catch up from the
// stream), then stops the node that leads the stream (publishes and workers
// fail over to the other two). At the end every event is searchable exactly
// once, no search ever returned another namespace's data or a duplicate, and
// searches failed only with 503 "not ready" (or, while a fault was in
// progress, a transport timeout). MEMINDEX_LONG=1 runs a bigger corpus and
// two rounds of faults.
func TestClusterEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and three worker processes")
	}
	long := os.Getenv("MEMINDEX_LONG") == "1"
	shape := clusterShapeFor(long)
	bin := binary(t)
	c := natstest.NewCluster(t, 3)
	nc := c.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewClient(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	workers := []*clusterWorker{{name: "w1"}, {name: "w2"}, {name: "w3"}}
	for _, w := range workers {
		w.data = t.TempDir()
		w.start(t, bin, c.URLs())
	}
	t.Cleanup(func() {
		for _, w := range workers {
			w.kill(t)
		}
		if t.Failed() {
			for _, w := range workers {
				t.Logf("worker %s log:\n%s", w.name, w.tail())
			}
		}
	})
	live := func() []*clusterWorker {
		var out []*clusterWorker
		for _, w := range workers {
			if w.running() {
				out = append(out, w)
			}
		}
		return out
	}

	// statusView is the cluster as the live workers report it.
	type statusView struct {
		held     map[string][]int // worker → ready partitions
		holders  map[int]int      // partition → ready holders
		messages map[int]int64    // partition → messages of its ready holder
		pending  uint64
	}
	view := func() (statusView, bool) {
		v := statusView{held: map[string][]int{}, holders: map[int]int{}, messages: map[int]int64{}}
		sts, err := cl.Status(ctx, 300*time.Millisecond)
		if err != nil || len(sts) != len(live()) {
			return v, false
		}
		for _, st := range sts {
			for _, p := range st.Partitions {
				if p.State != memindex.StateReady {
					continue
				}
				v.held[st.Worker] = append(v.held[st.Worker], p.Partition)
				v.holders[p.Partition]++
				v.messages[p.Partition] += p.Messages
				v.pending += p.Pending
			}
		}
		return v, true
	}
	// allReady: every partition has exactly one ready holder among the
	// live workers, each holding its fair share.
	allReady := func() bool {
		v, ok := view()
		if !ok || len(v.holders) != clusterPartitions {
			return false
		}
		for _, n := range v.holders {
			if n != 1 {
				return false
			}
		}
		n := len(live())
		for _, w := range live() {
			got := len(v.held[w.name])
			if got < clusterPartitions/n || got > (clusterPartitions+n-1)/n {
				return false
			}
		}
		return true
	}
	waitUntil(t, 60*time.Second, "three workers to spread the 8 partitions, each ready", allReady)
	v, _ := view()
	t.Logf("partitions spread: %v", v.held)

	s, err := js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Replicas; got != 3 {
		t.Fatalf("stream %s has %d replicas, want 3 (--stream-replicas 3)", memindex.StreamEvents, got)
	}

	// Searches run from the client throughout, half through whichever
	// worker receives memindex.search.<ns>, half straight to the holders.
	events := clusterCorpus(shape)
	var published atomic.Int64
	var searches searchLog
	searchCtx, stopSearches := context.WithCancel(ctx)
	var searchers sync.WaitGroup
	for i := range 2 {
		direct := client.NewClient(nc)
		direct.UsePartitions(clusterPartitions)
		searchers.Add(1)
		go func() {
			defer searchers.Done()
			r := rand.New(rand.NewPCG(uint64(i), 42))
			for searchCtx.Err() == nil {
				n := published.Load()
				if n == 0 {
					time.Sleep(10 * time.Millisecond) // nothing to look for yet
					continue
				}
				e := events[r.IntN(int(n))]
				ns, foreign := e.ev.Namespace, false
				if r.IntN(5) == 0 { // ask another namespace for this token
					ns, foreign = fmt.Sprintf("tenant-%03d", r.IntN(shape.namespaces)), true
					foreign = ns != e.ev.Namespace
				}
				req := memindex.SearchRequest{Namespace: ns, Query: e.token, K: 5, Mode: "keyword"}
				if r.IntN(4) == 0 { // hybrid: the vector leg returns neighbours, all of ns
					req.Mode, req.Query = "hybrid", e.token+" garden trip"
				}
				started := time.Now()
				rctx, rcancel := context.WithTimeout(searchCtx, 3*time.Second)
				var resp memindex.SearchResponse
				var err error
				if i == 0 {
					resp, err = routedSearch(rctx, nc, req)
				} else {
					resp, err = direct.Search(rctx, req)
				}
				rcancel()
				if searchCtx.Err() != nil {
					return
				}
				searches.check(ns, e.token, foreign, started, resp, err)
			}
		}()
	}
	stopSearching := func() {
		stopSearches()
		searchers.Wait()
	}
	defer stopSearching()

	// The publisher: every event once (Nats-Msg-Id = event id, so a retry
	// after a lost ack is de-duplicated), retried through leader changes,
	// paced so that ingest spans the faults.
	pubDone := make(chan error, 1)
	go func() {
		for i, e := range events {
			b, _ := json.Marshal(e.ev)
			for {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := js.Publish(pctx, memindex.EventSubject(e.ev.Namespace), b, jetstream.WithMsgID(e.ev.ID))
				pcancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					pubDone <- fmt.Errorf("publish event %d: %w", i, err)
					return
				}
			}
			published.Store(int64(i + 1))
			if i%40 == 39 {
				time.Sleep(40 * time.Millisecond) // pacing, not a wait for a condition
			}
		}
		pubDone <- nil
	}()
	waitPublished := func(n int) {
		t.Helper()
		waitUntil(t, 2*time.Minute, fmt.Sprintf("%d events published", n), func() bool { return published.Load() >= int64(n) })
	}

	victims := []*clusterWorker{workers[1], workers[0]}
	for round := range shape.rounds {
		// A worker dies mid-ingest: no hand-over; its partitions move to
		// the others once its leases expire, and catch up from the stream.
		waitPublished(len(events) * (3*round + 1) / (3 * shape.rounds))
		victim := victims[round%len(victims)]
		searches.fault(true)
		victim.kill(t)
		t.Logf("round %d: killed worker %s after %d of %d events", round, victim.name, published.Load(), len(events))
		waitUntil(t, 60*time.Second, "the live workers to take over every partition", allReady)
		searches.fault(false)
		v, _ := view()
		t.Logf("round %d: partitions after the kill: %v", round, v.held)

		// The node that leads the stream stops mid-ingest.
		waitPublished(len(events) * (3*round + 2) / (3 * shape.rounds))
		leader := c.WaitForStreamLeader(t, natstest.GlobalAccount, memindex.StreamEvents, 10*time.Second)
		searches.fault(true)
		c.Stop(leader)
		t.Logf("round %d: stopped NATS node %s, the leader of %s, after %d events", round, c.Name(leader), memindex.StreamEvents, published.Load())
		next := c.WaitForStreamLeader(t, natstest.GlobalAccount, memindex.StreamEvents, 30*time.Second)
		t.Logf("round %d: new stream leader %s", round, c.Name(next))
		waitPublished(len(events) * (3*round + 3) / (3 * shape.rounds))
		c.Restart(leader)
		waitUntil(t, 60*time.Second, "the restarted node to be current", func() bool {
			return c.StreamCurrent(natstest.GlobalAccount, memindex.StreamEvents)
		})
		waitUntil(t, 60*time.Second, "every partition ready after the node restart", allReady)
		searches.fault(false)
		if round+1 < shape.rounds { // the dead worker comes back and rejoins
			victim.start(t, bin, c.URLs())
			waitUntil(t, 60*time.Second, "the restarted worker to rejoin the spread", allReady)
		}
	}
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}

	// Every event applied exactly once: per partition, the ready holder has
	// exactly the messages published to it, and nothing is pending.
	want := map[int]int64{}
	for _, e := range events {
		want[memindex.Partition(e.ev.Namespace, clusterPartitions)]++
	}
	var last string // what the last look saw, logged when the wait fails
	defer func() {
		if t.Failed() && last != "" {
			t.Logf("last look at the workers' status: %s", last)
		}
	}()
	waitUntil(t, 90*time.Second, "every event applied by the live workers", func() bool {
		v, ok := view()
		last = fmt.Sprintf("status answered=%v pending=%d holders=%v messages=%v want=%v held=%v", ok, v.pending, v.holders, v.messages, want, v.held)
		if !ok || v.pending != 0 || len(v.holders) != clusterPartitions {
			return false
		}
		for p := range clusterPartitions {
			if v.messages[p] != want[p] {
				return false
			}
		}
		return true
	})
	stopSearching()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(events)) {
		t.Fatalf("stream holds %d events, published %d", info.State.Msgs, len(events))
	}

	// Every token is found exactly once, in its own namespace and session.
	for _, e := range events {
		req := memindex.SearchRequest{Namespace: e.ev.Namespace, Query: e.token, K: 5, Mode: "keyword"}
		resp, err := cl.Search(ctx, req)
		// A lease may still move after the faults (the lease bucket's leader
		// moved with the stopped node): a 503 "retry" is the promised answer
		// then, so retry it for a while; any other error fails at once.
		for deadline := time.Now().Add(30 * time.Second); isRetry503(err) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			resp, err = cl.Search(ctx, req)
		}
		if err != nil {
			t.Fatalf("final search of %s in %s: %v", e.token, e.ev.Namespace, err)
		}
		n := 0
		for _, h := range resp.Hits {
			if strings.Contains(h.Text, e.token) {
				n++
				if h.SessionKey != e.ev.SessionKey || !strings.Contains(h.Text, "["+e.ev.Namespace+"]") {
					t.Fatalf("final search of %s: hit in %s/%s %q, want session %s of %s", e.token, e.ev.Namespace, h.SessionKey, h.Text, e.ev.SessionKey, e.ev.Namespace)
				}
			}
		}
		if n != 1 {
			t.Fatalf("final search of %s in %s: %d chunks contain it, want exactly 1 (hits %+v)", e.token, e.ev.Namespace, n, resp.Hits)
		}
	}

	t.Logf("searches during the run: %s", searches.String())
	searches.mu.Lock()
	defer searches.mu.Unlock()
	if len(searches.wrong) > 0 {
		t.Fatalf("%d wrong search results, first: %s", len(searches.wrong), searches.wrong[0])
	}
	if len(searches.other) > 0 {
		t.Fatalf("%d searches failed with something other than 503 not ready, first: %s", len(searches.other), searches.other[0])
	}
	if n := len(searches.outside); n > 0 {
		t.Fatalf("%d searches failed with a transport error outside a fault (a hand-over must answer 503, not drop a request), first: %s", n, searches.outside[0])
	}
	// 503 "not ready" is the promised answer while partitions move, not a
	// steady state: 4-6 % of the searches in runs here (89 of 2,283, 104
	// of 1,720); a fifth means a partition answered 503 for most of a run.
	if total := searches.ok + searches.notReady; searches.notReady*5 > total {
		t.Fatalf("%d of %d searches were answered 503 not ready; at most a fifth are", searches.notReady, total)
	}
	if searches.hits == 0 || searches.ok < 50 {
		t.Fatalf("only %d searches answered (%d found their token) during the run; the test proves little", searches.ok, searches.hits)
	}
}

// isRetry503 reports whether err is a worker's 503 answer (not ready,
// partition moving: retry).
func isRetry503(err error) bool {
	var re *client.RemoteError
	return errors.As(err, &re) && re.Code == "503"
}
