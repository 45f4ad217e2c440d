package client_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/query"
	"memindex/store"
)

// The real parts the client is tested against: shard files as `memindex
// serve` writes them, an in-process nats-server, and a worker (query's
// Service and Engine over a shard). Only these tests import store, query
// and embedder; the package itself must not (deps_test.go).

// testTexts are the records writeTestShards stores in namespace agent-7.
var testTexts = []string{"Ana moves to Lisbon in May.", "Ben repairs his bicycle on Sundays.", "The harbour is busy in summer."}

func mustTB(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// writeTestShards writes a data directory as `memindex serve` lays it out
// (shards/p0.db, one partition) holding testTexts as records of agent-7
// with built-in embedder vectors and space, and returns the data directory.
func writeTestShards(tb testing.TB) string {
	tb.Helper()
	data := tb.TempDir()
	mustTB(tb, os.MkdirAll(filepath.Join(data, "shards"), 0o755))
	sh := openTestShard(tb, filepath.Join(data, "shards", "p0.db"))
	applyTexts(tb, sh, 1, testTexts...)
	mustTB(tb, sh.Close(context.Background()))
	return data
}

// openTestShard opens (read-write) a shard with the built-in embedder's
// dims and space.
func openTestShard(tb testing.TB, path string) *store.Shard {
	tb.Helper()
	info := builtin(tb).Info()
	sh, err := store.Open(context.Background(), path, store.Config{Dims: info.Dims, Space: info.Provider + "/" + info.Model + "/" + strconv.Itoa(info.Dims)})
	mustTB(tb, err)
	return sh
}

func builtin(tb testing.TB) *embedder.Builtin {
	tb.Helper()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{})
	mustTB(tb, err)
	return emb
}

// applyTexts stores texts as records r<seq>-<i> of agent-7 at stream seq.
func applyTexts(tb testing.TB, sh *store.Shard, seq uint64, texts ...string) {
	tb.Helper()
	ctx := context.Background()
	vs, err := builtin(tb).Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
	mustTB(tb, err)
	b := store.Batch{Seq: seq}
	for i, text := range texts {
		id := "r" + strconv.FormatUint(seq, 10) + "-" + strconv.Itoa(i)
		b.Records = append(b.Records, store.RecordUpsert{Chunk: store.Chunk{ID: id, Namespace: "agent-7",
			Source: memindex.SourceRecords, Path: id, Text: text, Vector: vs[i]}})
	}
	_, err = sh.Apply(ctx, b)
	mustTB(tb, err)
}

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

// startWorker serves the shard file path as a memindex worker on nc:
// query's Service over an Engine whose router sends agent-7 to the shard.
func startWorker(tb testing.TB, nc *nats.Conn, path string) {
	tb.Helper()
	ctx := context.Background()
	sh := openTestShard(tb, path)
	tb.Cleanup(func() { sh.Close(ctx) })
	router := query.RouterFunc(func(ns string) (query.Searcher, int, error) {
		if ns == "agent-7" {
			return sh, 0, nil
		}
		return nil, 0, query.ErrNotOwned
	})
	svc, err := query.NewService(nc, query.ServiceConfig{Version: "0.1.0", Worker: "w1"}, query.NewEngine(query.EngineConfig{}, router, builtin(tb)), nil)
	mustTB(tb, err)
	tb.Cleanup(func() { svc.Stop(ctx) })
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

// countingLocal is query.Local counting its opens, so a test sees when a
// lazy fallback was opened.
type countingLocal struct {
	query.Local
	mu    sync.Mutex
	opens int
}

func (c *countingLocal) OpenLocal(ctx context.Context, cfg client.LocalConfig) (client.Manager, error) {
	c.mu.Lock()
	c.opens++
	c.mu.Unlock()
	return c.Local.OpenLocal(ctx, cfg)
}

func (c *countingLocal) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens
}
