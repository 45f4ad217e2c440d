package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/query"
	"memindex/store"
)

// Conformance of the concrete types to the seams they are wired into.
var (
	_ consumer.Shard    = (*store.Shard)(nil)
	_ query.Searcher    = (*store.Shard)(nil)
	_ embedder.Cache    = (*store.Cache)(nil)
	_ embedder.Embedder = (*embedder.Cached)(nil)
)

// Node is one running worker with everything it started.
type Node struct {
	cfg      Config
	log      *slog.Logger
	embedded *server.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	cache    *store.Cache
	cached   *embedder.Cached
	breaker  *embedder.Breaker // nil for the built-in embedder
	own      ownership         // ownership.go
	// partitions is the stream's partition count P, read at Open.
	partitions int
	// The memory budget of Config.MemoryLimit (memory.go): each shard's
	// SQLite page cache, their sum, the Go heap's soft limit, each
	// partition's pull buffer (0: the consumer's default) and the payload
	// all partitions' batches may hold (0: no bound).
	shardCacheKiB    int
	sqliteCacheBytes int64
	goMemLimit       int64
	pullBufferBytes  int
	inflightBytes    int64
	// serving is the generation searches use; next, when not nil, is being
	// built for another vector space (see generation.go). genMu guards both.
	genMu    sync.RWMutex
	serving  *generation
	next     *generation
	routes   []atomic.Pointer[route]
	switched atomic.Int64
	svc      *query.Service
	url      string
	closeMu  sync.Mutex
	closers  []func()
	// Observability (http.go, metrics.go): started is set once the node
	// serves, draining once it shuts down.
	metrics  *nodeMetrics
	httpAddr string
	started  atomic.Bool
	draining atomic.Bool
}

// Open validates cfg and starts, in order: the HTTP endpoints, the embedded
// NATS server (unless cfg.NATS names a server), the connection, the
// streams, the embedding cache and embedder stack, the shards, the
// consumers and the micro service. The node serves searches when Open
// returns and consumes once Run runs. On error it undoes what it started.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := cfg
	n := &Node{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			n.closeAll()
		}
	}()
	release, err := LockData(c.Data)
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, release)
	if err := n.startHTTP(); err != nil {
		return nil, err
	}
	if c.NATS.Server == "" && c.NATS.Context == "" {
		var auth *EmbeddedAuth
		if c.Auth {
			if auth, err = embeddedAuthFor(c.Data, &c.NATS); err != nil {
				return nil, err
			}
		}
		var users []*server.NkeyUser
		if auth != nil {
			users = auth.users
		}
		if n.embedded, err = startEmbedded(c.Listen, filepath.Join(c.Data, "nats"), users); err != nil {
			return nil, err
		}
		n.closers = append(n.closers, func() { n.embedded.Shutdown(); n.embedded.WaitForShutdown() })
		c.NATS.Server = n.embedded.ClientURL()
		log.Info("embedded NATS server with JetStream", "url", c.NATS.Server, "store", filepath.Join(c.Data, "nats"), "auth", c.Auth)
		if auth != nil {
			log.Info("embedded NATS server requires authentication: connect with --nkey (memindex and the nats CLI)",
				"admin_nkey", auth.AdminSeed, "worker_nkey", auth.WorkerSeed)
		}
	} else if c.Auth {
		return nil, errors.New("--auth configures the embedded NATS server; with --server or --context the server's own configuration decides who may connect (see deployments/nats-tenants.conf)")
	}
	n.url = c.NATS.Server
	c.NATS.Log = log
	if n.nc, err = c.NATS.Connect("memindex worker " + c.Worker); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, n.nc.Close)
	if n.js, err = jetstream.New(n.nc); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if n.partitions, err = consumer.EnsureStreams(sctx, n.js, consumer.StreamConfig{Partitions: c.PartitionCount, Replicas: c.StreamReplicas}); err != nil {
		if errors.Is(err, consumer.ErrReplicasReduced) || errors.Is(err, consumer.ErrReplicasUnavailable) {
			return nil, fmt.Errorf("--stream-replicas %d (MEMINDEX_STREAM_REPLICAS): %w", c.StreamReplicas, err)
		}
		return nil, err
	}
	if err := n.applyMemoryLimit(); err != nil {
		return nil, err
	}
	if err := n.initOwnership(); err != nil {
		return nil, err
	}

	if n.cache, err = store.OpenCacheWith(ctx, filepath.Join(c.Data, "cache.db"), store.CacheConfig{MaxBytes: c.CacheMaxBytes}); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, func() { n.cache.Close(context.Background()) })
	stack, err := n.newStack(c.Embedder)
	if err != nil {
		return nil, err
	}
	n.cached, n.breaker = stack.Cached, stack.Breaker
	info := n.cached.Info()

	if err := n.openGenerations(ctx, sctx, info); err != nil {
		return nil, err
	}

	router := query.RouterFunc(func(ns string) (query.Searcher, int, error) {
		p := memindex.Partition(ns, n.partitions)
		if p >= len(n.routes) {
			return nil, p, query.ErrNotOwned
		}
		r := n.routes[p].Load()
		if r == nil {
			return nil, p, n.notHeld(p)
		}
		return r.searcher, p, nil
	})
	engine := query.NewEngine(query.EngineConfig{RRFK: rrfK(c.RRFK, info), RRFVectorWeight: rrfVectorWeight(c.RRFVectorWeight, info), RRFKeywordWeight: c.RRFKeywordWeight}, router, n.cached)
	n.svc, err = query.NewService(n.nc, query.ServiceConfig{
		Version: serviceVersion, Workers: c.SearchWorkers, MaxPending: c.SearchPending, Worker: c.Worker,
		Metrics: n.metrics, TracerProvider: c.TracerProvider,
		Limits: c.Limits, RatePerNamespace: c.RatePerNamespace,
		Partitions: n.partitions, Holds: n.holds,
	}, engine, n.status)
	if err != nil {
		return nil, err
	}
	if c.Group != "" {
		err = n.startLeaser(sctx)
	} else {
		err = n.serveStatic()
	}
	if err != nil {
		return nil, err
	}
	if err := n.startSnapshots(ctx); err != nil { // snapshot.go
		return nil, err
	}
	n.started.Store(true)
	log.Info("memindex worker ready", "worker", c.Worker, "partitions", n.partitions,
		"embedder", info.Provider, "model", info.Model, "dims", info.Dims, "data", c.Data,
		"memoryLimit", c.MemoryLimit, "gcPercent", gcPercent())
	return n, nil
}

// newStack builds the embedder stack of provider p (embedder.NewStack) with
// the node's rate limit, breaker, pool, cache and metrics: the serving
// embedder and every generation's get the same stack.
func (n *Node) newStack(p embedder.ProviderConfig) (*embedder.Stack, error) {
	p.Observe = n.metrics.observeEmbed
	return embedder.NewStack(embedder.StackConfig{
		Provider: p, RateLimit: n.cfg.RateLimit, Breaker: n.cfg.Breaker,
		Pool:  embedder.PoolConfig{BatchSize: n.cfg.EmbedBatch, Concurrency: n.cfg.EmbedConcurrency},
		Cache: n.cache,
	})
}

// URL returns the NATS server URL the node is connected to: the embedded
// server's when it started one.
func (n *Node) URL() string { return n.url }

// HTTPAddr returns the address the HTTP endpoints listen on; "" when they
// are off.
func (n *Node) HTTPAddr() string { return n.httpAddr }

// Partitions returns the stream's partition count P.
func (n *Node) Partitions() int { return n.partitions }

// Conn returns the node's NATS connection.
func (n *Node) Conn() *nats.Conn { return n.nc }

// Config returns the configuration the node runs with.
func (n *Node) Config() Config { return n.cfg }

// Embedder returns the serving embedder stack (cached, batched, and for a
// remote provider rate-limited behind a breaker).
func (n *Node) Embedder() embedder.Embedder { return n.cached }

// Shards returns the serving generation's shards by partition (a copy: a
// group member's partitions come and go).
func (n *Node) Shards() map[int]*store.Shard { return n.shardsNow() }

// Holds reports whether this node answers partition p's searches itself.
func (n *Node) Holds(p int) bool { return n.holds(p) }

// IngestWorker returns the worker of the generation being built or, when
// none is, served: the one ingesting.
func (n *Node) IngestWorker() *consumer.Worker {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	return n.newest().worker
}

// Readiness returns the serving generation's readiness of each held
// partition (consumer.Worker.Readiness).
func (n *Node) Readiness(ctx context.Context) []consumer.PartitionReadiness {
	n.genMu.RLock()
	w := n.serving.worker
	n.genMu.RUnlock()
	return w.Readiness(ctx)
}

// Status returns the node's status, as `memindex status` shows it.
func (n *Node) Status(ctx context.Context) memindex.StatusResponse { return n.status(ctx) }

func (n *Node) status(ctx context.Context) memindex.StatusResponse {
	info := n.cached.Info()
	st := n.cached.Stats()
	cs, _ := n.cache.Stats(ctx) // in-memory totals; only fails after Close
	n.genMu.RLock()
	serving := n.serving
	n.genMu.RUnlock()
	parts := serving.worker.Status(ctx)
	resp := memindex.StatusResponse{
		Type: "status", Version: 1, Worker: n.cfg.Worker, Ready: serving.worker.Ready(),
		Embedder: memindex.EmbedderStatus{Provider: info.Provider, Model: info.Model, Dims: info.Dims,
			CacheHits: st.Hits, CacheMisses: st.Misses, CacheEntries: cs.Entries, CacheBytes: cs.Bytes,
			CacheMaxBytes: cs.MaxBytes, CacheEvictions: cs.Evictions},
		Partitions: parts, Switch: n.switchStatus(ctx),
		Memory: n.memoryStatus(parts, serving.worker.PullBufferBytes(), serving.worker.InflightBytes()),
	}
	resp.DLQ = resp.Total().DLQ
	n.ownershipStatus(&resp)
	if n.breaker != nil {
		bs := n.breaker.State()
		resp.Embedder.Breaker, resp.Embedder.BreakerOpens = bs.State, bs.Opens
		if bs.State != embedder.BreakerClosed {
			resp.Embedder.BreakerOpenUntil = bs.OpenUntil.UTC().Format(time.RFC3339)
		}
	}
	return resp
}

// Run consumes until ctx ends, then shuts down in reverse order of start:
// intake stops and the batch in hand commits and is acknowledged, the
// service stops, the connection drains, shards and cache close, the
// embedded server stops. Call it once; Close after it has nothing left to
// do.
func (n *Node) Run(ctx context.Context) error {
	n.serving.run(ctx)
	n.runLeaser(ctx)
	readyDone := make(chan struct{})
	go func() { defer close(readyDone); n.watchReady(ctx) }() // waited for below
	switchDone := make(chan struct{})
	if n.next != nil {
		n.next.run(ctx)
		go func() { defer close(switchDone); n.switchOver(ctx) }()
	} else {
		close(switchDone)
	}
	<-ctx.Done()
	n.draining.Store(true)
	// A group member hands its partitions over first: each stops after
	// committing its batch in hand, then its lease is released.
	<-n.own.leaserDone
	<-readyDone
	<-switchDone
	n.genMu.RLock()
	gens := []*generation{n.serving, n.next}
	n.genMu.RUnlock()
	var runErr error
	for _, g := range gens {
		if g != nil {
			runErr = errors.Join(runErr, g.stop())
		}
	}
	n.log.Info("intake stopped; shutting down")
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.closeMu.Lock()
	svc := n.svc
	n.svc = nil // stopped here, with a deadline: closeAll has nothing to stop
	n.closeMu.Unlock()
	if svc != nil {
		if err := svc.Stop(stopCtx); err != nil {
			n.log.Error("stop service", "err", err)
		}
	}
	// Acks are fire-and-forget publishes: flush them before closing.
	if err := n.nc.FlushTimeout(5 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		n.log.Error("flush NATS connection", "err", err)
	}
	n.closeAll()
	return runErr
}

// Start runs the node in the background until ctx ends or stop is called;
// stop then waits for Run to return and returns its error. Call one of Run
// and Start, once.
func (n *Node) Start(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }() // owned by stop, which waits for it
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
}

// Close undoes Open, last started first, for a node that did not Run (or
// after Run). It returns ctx's error when ctx ends first; what it started
// closing then finishes in the background.
func (n *Node) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { defer close(done); n.closeAll() }() // waited for below, or left to finish
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close node: %w", ctx.Err())
	}
}

// closeAll stops the service and runs the closers, last first; a second
// call finds none.
func (n *Node) closeAll() {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.svc != nil {
		_ = n.svc.Stop(context.Background())
		n.svc = nil
	}
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
	n.closers = nil
}

// The fusion defaults with the built-in embedder, a lexical model much
// weaker than BM25 over messages with context: the vector leg weighs 0.05
// and RRF's k is 10, so it only breaks near-ties and adds candidates the
// keyword leg did not find, and never pulls a good keyword hit down. Chosen
// on one half of LoCoMo's conversations (message units, strict budget, an
// in-process run over the same store and query code): weights 0.3 / 0.1 /
// 0.05 gave rec@5 0.671 / 0.683 / 0.684 against keyword alone 0.683; on the
// other half 0.672 / 0.671 / 0.677 against 0.677; plain RRF (k 60, 1/1)
// 0.563 and 0.564. `memindex eval --tune` over NATS: BENCHMARKS.md.
const (
	builtinRRFVectorWeight = 0.05
	builtinRRFK            = 10
)

// rrfK returns the configured k, or when it is 0 the default for the
// embedder: builtinRRFK for the built-in one, 0 (query.DefaultRRFK, 60)
// for a provider's model.
func rrfK(configured float64, info embedder.Info) float64 {
	if configured == 0 && info.Provider == "builtin" {
		return builtinRRFK
	}
	return configured
}

// rrfVectorWeight returns the configured weight, or when it is 0 the
// default for the embedder: builtinRRFVectorWeight for the built-in one, 1
// (plain RRF) for a provider's model.
func rrfVectorWeight(configured float64, info embedder.Info) float64 {
	switch {
	case configured != 0:
		return configured
	case info.Provider == "builtin":
		return builtinRRFVectorWeight
	}
	return 1
}

// ShardPath is the file of partition p's shard in a generation's shard
// directory (Data/shards for the first).
func ShardPath(dir string, p int) string {
	return filepath.Join(dir, "p"+strconv.Itoa(p)+".db")
}

// serviceVersion is the micro service version (micro requires semver).
const serviceVersion = "0.1.0"

// StartEmbedded starts an in-process nats-server with JetStream on listen
// (port -1: a free one), storing under dir, as Open does when Config.NATS
// names no server; offline commands (snapshot, rebuild) use it on a stopped
// worker's data directory. Shut it down with Shutdown and WaitForShutdown.
func StartEmbedded(listen, dir string) (*server.Server, error) {
	return startEmbedded(listen, dir, nil)
}

// startEmbedded starts the embedded server; with users, only those nkey
// users may connect.
func startEmbedded(listen, dir string, users []*server.NkeyUser) (*server.Server, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: bad port", listen)
	}
	opts := &server.Options{
		ServerName: "memindex-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: memindex.MaxEventBytes + 64<<10,
	}
	opts.Nkeys = users
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(15 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded NATS server on %s did not become ready (is the port in use? set --listen or --server)", listen)
	}
	return s, nil
}
