package query

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"memindex"
)

// startNATS starts an in-process nats-server with JetStream on port (-1:
// random) and returns it; the test shuts it down at the end unless done.
func startNATS(tb testing.TB, port int) *server.Server {
	tb.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true})
	mustTB(tb, err)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("nats-server not ready within 10s")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// poll calls cond until it is true or 20s pass.
func poll(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRemoteFailsOverToLocal: a remote primary (a real worker: Service and
// Engine over a real shard, on a real nats-server) answers; its server
// goes away and the local backend over the same shard file answers, saying
// why; the server comes back on the same port and, after the breaker's
// cool-down on the injected clock, the remote answers again.
func TestRemoteFailsOverToLocal(t *testing.T) {
	ctx := context.Background()
	data := writeTestShards(t)
	srv := startNATS(t, -1)
	url := srv.ClientURL()
	port := srv.Addr().(*net.TCPAddr).Port
	opts := []nats.Option{nats.ReconnectWait(20 * time.Millisecond), nats.MaxReconnects(-1)}
	workerNC, err := nats.Connect(url, opts...)
	mustTB(t, err)
	defer workerNC.Close()
	sh := openTestShard(t, filepath.Join(data, "shards", "p0.db"))
	defer sh.Close(ctx)
	svc, err := NewService(workerNC, ServiceConfig{Version: "0.1.0", Worker: "w1"}, NewEngine(EngineConfig{}, routeTo(sh), builtin(t)), nil)
	mustTB(t, err)
	defer svc.Stop(ctx)
	nc, err := nats.Connect(url, opts...)
	mustTB(t, err)
	defer nc.Close()

	clk := newFakeClock()
	m, err := Open(ctx, Config{Backend: BackendRemote, Remote: RemoteConfig{Conn: nc},
		Fallback: &Config{Backend: BackendLocal, Local: LocalConfig{Path: data}},
		Breaker:  BreakerConfig{Failures: 1, CoolDown: time.Minute, Now: clk.Now}})
	mustTB(t, err)
	defer m.Close(ctx)
	f := m.(*fallback)
	req := memindex.SearchRequest{Namespace: "agent-7", Query: "who moves to Lisbon"}
	search := func(wantBackend, wantReason string) memindex.SearchResponse {
		t.Helper()
		resp, err := m.Search(ctx, req)
		if err != nil {
			t.Fatalf("Search: %v", err)
		}
		if resp.Backend != wantBackend || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Text, "Lisbon") {
			t.Fatalf("Search()=backend %q hits %+v, want %s with Lisbon first", resp.Backend, resp.Hits, wantBackend)
		}
		switch {
		case wantReason == "" && resp.Fallback != nil:
			t.Fatalf("Search() fallback %+v, want none", resp.Fallback)
		case wantReason != "" && (resp.Fallback == nil || resp.Fallback.From != BackendRemote || !strings.Contains(resp.Fallback.Reason, wantReason)):
			t.Fatalf("Search() fallback %+v, want from remote, reason containing %q", resp.Fallback, wantReason)
		}
		return resp
	}
	search(BackendRemote, "")
	if f.fb != nil {
		t.Fatal("the local fallback was opened while the remote answered")
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	poll(t, "the client to see the server gone", func() bool { return !nc.IsConnected() })
	search(BackendLocal, "nats connection is")
	if got := f.BreakerState(); got != BreakerOpen {
		t.Fatalf("BreakerState()=%s after the remote failed, want open", got)
	}
	sts, err := m.Status(ctx)
	if err != nil || len(sts) != 1 || sts[0].Backend != BackendLocal || sts[0].Fallback == nil {
		t.Fatalf("Status()=%+v, %v, want the local status with fallback info", sts, err)
	}

	startNATS(t, port) // same port: the clients reconnect
	direct := NewClient(nc)
	poll(t, "the worker to serve again", func() bool {
		_, err := direct.Search(ctx, req)
		return err == nil
	})
	search(BackendLocal, "circuit open") // the cool-down has not passed on the injected clock
	clk.Advance(time.Minute)
	search(BackendRemote, "")
	if got := f.BreakerState(); got != BreakerClosed {
		t.Fatalf("BreakerState()=%s after the remote came back, want closed", got)
	}
}
