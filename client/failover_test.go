package client_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/query"
)

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
	startWorker(t, workerNC, filepath.Join(data, "shards", "p0.db"))
	nc, err := nats.Connect(url, opts...)
	mustTB(t, err)
	defer nc.Close()

	clk := client.NewFakeClock()
	local := &countingLocal{Local: query.Local{}}
	m, err := client.Open(ctx, client.Config{Backend: client.BackendRemote, Remote: client.RemoteConfig{Conn: nc},
		Fallback: &client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: data, Opener: local}},
		Breaker:  client.BreakerConfig{Failures: 1, CoolDown: time.Minute, Now: clk.Now}})
	mustTB(t, err)
	defer m.Close(ctx)
	br, ok := m.(interface{ BreakerState() client.BreakerState })
	if !ok {
		t.Fatalf("Open with a fallback returned %T, which has no BreakerState", m)
	}
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
		case wantReason != "" && (resp.Fallback == nil || resp.Fallback.From != client.BackendRemote || !strings.Contains(resp.Fallback.Reason, wantReason)):
			t.Fatalf("Search() fallback %+v, want from remote, reason containing %q", resp.Fallback, wantReason)
		}
		return resp
	}
	search(client.BackendRemote, "")
	if local.count() != 0 {
		t.Fatal("the local fallback was opened while the remote answered")
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	poll(t, "the client to see the server gone", func() bool { return !nc.IsConnected() })
	search(client.BackendLocal, "nats connection is")
	if got := br.BreakerState(); got != client.BreakerOpen {
		t.Fatalf("BreakerState()=%s after the remote failed, want open", got)
	}
	sts, err := m.Status(ctx)
	if err != nil || len(sts) != 1 || sts[0].Backend != client.BackendLocal || sts[0].Fallback == nil {
		t.Fatalf("Status()=%+v, %v, want the local status with fallback info", sts, err)
	}

	startNATS(t, port) // same port: the clients reconnect
	direct := client.NewClient(nc)
	poll(t, "the worker to serve again", func() bool {
		_, err := direct.Search(ctx, req)
		return err == nil
	})
	search(client.BackendLocal, "circuit open") // the cool-down has not passed on the injected clock
	clk.Advance(time.Minute)
	search(client.BackendRemote, "")
	if got := br.BreakerState(); got != client.BreakerClosed {
		t.Fatalf("BreakerState()=%s after the remote came back, want closed", got)
	}
	if n := local.count(); n != 1 {
		t.Fatalf("the local fallback was opened %d times, want once", n)
	}
}
