package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

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

type serveConfig struct {
	conn       connFlags
	listen     string
	auth       bool // embedded server: require the credentials in data/auth
	data       string
	partitions int // P: the stream's partition count (--partition-count)
	// Ownership (ownership.go): the static owned set (--partitions), or the
	// dynamic group, holders per partition and lease TTL.
	owned    string
	group    string
	replicas int
	leaseTTL time.Duration
	// consumerInactive: JetStream removes a durable consumer nobody pulled
	// from for this long (a gone worker's).
	consumerInactive time.Duration
	provider         providerFlags
	cacheMax         int64
	// memoryLimit (--memory-limit) bounds the worker's memory: the shards'
	// SQLite page caches and the Go heap's soft limit derived from it
	// (memory.go).
	memoryLimit      sizeFlag
	shardCacheKiB    int
	sqliteCacheBytes int64
	goMemLimit       int64
	rateLimit        embedder.RateLimitConfig
	rrfVector        float64
	rrfKeyword       float64
	rrfK             float64
	breaker          embedder.BreakerConfig
	batch            int
	embedBatch       int
	embedConc        int
	chunkTokens      int
	contextMsgs      int // chunker.Config.ContextMessages: 0 default, negative none
	worker           string
	logLevel         string
	logFormat        string
	searchPool       int
	maxPending       int
	limits           limitFlags // limits.go

	// Observability (http.go, telemetry.go): the HTTP endpoints' address
	// and whether it was asked for, the readiness lag budget, and the
	// tracer provider (nil: tracing off).
	http         string
	httpExplicit bool
	readyLag     int
	tracer       trace.TracerProvider

	noSqliteVec      bool          // --sqlite-vec=false: shards keep vectors without sqlite-vec (go-scan)
	snapshotInterval time.Duration // --snapshot-interval: periodic shard snapshots (snapshot.go); 0 off

	streamReplicas int // --stream-replicas: consumer.StreamConfig.Replicas (0 keeps the stream's, 1 for a new one)
}

func runServe(ctx context.Context, args []string) error {
	var c serveConfig
	host, _ := os.Hostname()
	fs := newFlagSet("serve", "[flags]")
	c.conn.register(fs, "")
	fs.StringVar(&c.listen, "listen", env("MEMINDEX_LISTEN", "127.0.0.1:4222"), "address of the embedded NATS server when --server is not set (MEMINDEX_LISTEN)")
	authEnv, authErr := envBool("MEMINDEX_AUTH")
	fs.BoolVar(&c.auth, "auth", authEnv, "embedded NATS server: require authentication with nkeys generated under DATA/auth on first start, reused after (MEMINDEX_AUTH)")
	fs.StringVar(&c.data, "data", env("MEMINDEX_DATA", "./data"), "data directory: shards, embedding cache, embedded NATS store (MEMINDEX_DATA)")
	fs.IntVar(&c.partitions, "partition-count", envInt("MEMINDEX_PARTITION_COUNT", 0), "partition count P of a new stream (0: the existing stream's, or 16); fixed for the life of the stream (MEMINDEX_PARTITION_COUNT)")
	fs.StringVar(&c.owned, "partitions", env("MEMINDEX_PARTITIONS", "all"), "partitions this worker owns: all, or a list like 0-7 or 0,3,5-6; searches of the others are forwarded to their owners (MEMINDEX_PARTITIONS)")
	fs.StringVar(&c.group, "group", env("MEMINDEX_GROUP", ""), "dynamic group: workers of one group share the partitions through leases in a NATS KV bucket, and take over a stopped or dead worker's (MEMINDEX_GROUP)")
	fs.IntVar(&c.replicas, "replicas", envInt("MEMINDEX_REPLICAS", 1), "workers of the group holding each partition, each in its own shard file; searches are balanced over the ready ones (MEMINDEX_REPLICAS)")
	fs.DurationVar(&c.leaseTTL, "lease-ttl", envDuration("MEMINDEX_LEASE_TTL", consumer.DefaultLeaseTTL), "partition lease TTL in a group: a dead worker's partitions move after it; a worker stops writing TTL/2 after its last renewal (MEMINDEX_LEASE_TTL)")
	fs.DurationVar(&c.consumerInactive, "consumer-inactive", envDuration("MEMINDEX_CONSUMER_INACTIVE", defaultConsumerInactive), "JetStream deletes a partition's durable consumer after nobody pulled from it for this long (a worker stopped for good, a partition moved away); harmless, a worker re-creates its consumers from its shards when it starts; 0 keeps them forever (MEMINDEX_CONSUMER_INACTIVE)")
	fs.IntVar(&c.streamReplicas, "stream-replicas", envInt("MEMINDEX_STREAM_REPLICAS", 0), "replicas of the event and dead-letter streams: 3 on a 3-node JetStream cluster, 1 on a single server; 0 keeps the existing streams' (1 for new ones); never lowered (MEMINDEX_STREAM_REPLICAS)")
	c.provider.register(fs)
	fs.Float64Var(&c.rrfVector, "rrf-vector-weight", 0, "weight of the vector leg in RRF fusion; 0: 0.05 with the built-in embedder (a lexical model, much weaker than BM25 with context: it breaks ties and adds candidates; BENCHMARKS.md), 1 with a provider's model")
	fs.Float64Var(&c.rrfKeyword, "rrf-keyword-weight", 1, "weight of the keyword leg in RRF fusion")
	fs.Float64Var(&c.rrfK, "rrf-k", 0, "the k of RRF, score = Σ weight/(k + rank); 0: 10 with the built-in embedder (trust the keyword leg's top ranks), 60 with a provider's model")
	fs.IntVar(&c.rateLimit.RequestsPerMinute, "embed-rpm", envInt("MEMINDEX_EMBED_RPM", 0), "provider requests per minute; 0: unlimited (MEMINDEX_EMBED_RPM)")
	fs.IntVar(&c.rateLimit.TokensPerMinute, "embed-tpm", envInt("MEMINDEX_EMBED_TPM", 0), "provider tokens per minute (estimated); 0: unlimited (MEMINDEX_EMBED_TPM)")
	fs.IntVar(&c.breaker.Failures, "breaker-failures", envInt("MEMINDEX_BREAKER_FAILURES", 5), "consecutive provider failures that open the circuit breaker (MEMINDEX_BREAKER_FAILURES)")
	fs.DurationVar(&c.breaker.Cooldown, "breaker-cooldown", 30*time.Second, "how long an open breaker waits before a probe")
	fs.Int64Var(&c.cacheMax, "cache-max-bytes", int64(envInt("MEMINDEX_CACHE_MAX_BYTES", 1<<30)), "embedding cache size bound; least recently used entries go first; 0: unbounded (MEMINDEX_CACHE_MAX_BYTES)")
	var memLimitErr error
	if v := os.Getenv("MEMINDEX_MEMORY_LIMIT"); v != "" {
		if err := c.memoryLimit.Set(v); err != nil {
			memLimitErr = fmt.Errorf("MEMINDEX_MEMORY_LIMIT: %w", err)
		}
	}
	fs.Var(&c.memoryLimit, "memory-limit", "bound of the worker's memory, a `size` such as 2GiB: a quarter goes to the SQLite page caches of the partitions it may hold (no file mapping), the rest is the Go heap's soft limit, which holds the keyword and vector indexes; status reports the split and what is used; 0: no bound (SQLite defaults: 32,000 KiB a connection, 256 MiB mapped) (MEMINDEX_MEMORY_LIMIT)")
	fs.IntVar(&c.batch, "batch", envInt("MEMINDEX_BATCH", 1000), "most events applied in one transaction (MEMINDEX_BATCH)")
	fs.IntVar(&c.embedBatch, "embed-batch", envInt("MEMINDEX_EMBED_BATCH", 64), "texts per embedding request (MEMINDEX_EMBED_BATCH)")
	fs.IntVar(&c.embedConc, "embed-concurrency", envInt("MEMINDEX_EMBED_CONCURRENCY", 4), "embedding requests in flight (MEMINDEX_EMBED_CONCURRENCY)")
	fs.IntVar(&c.chunkTokens, "chunk-tokens", envInt("MEMINDEX_CHUNK_TOKENS", defaultChunkTokens), "most tokens of one indexed chunk: each session message is one chunk, a longer message is indexed in pieces and still returned whole (MEMINDEX_CHUNK_TOKENS)")
	fs.IntVar(&c.contextMsgs, "chunk-context", envInt("MEMINDEX_CHUNK_CONTEXT", 2), "messages before a session chunk indexed as its context (keyword weight 0.5, and embedded with it); 0: none (MEMINDEX_CHUNK_CONTEXT)")
	fs.StringVar(&c.worker, "worker", env("MEMINDEX_WORKER", host), "this worker's name in status (MEMINDEX_WORKER)")
	fs.StringVar(&c.logLevel, "log-level", env("MEMINDEX_LOG_LEVEL", "info"), "debug, info, warn or error (MEMINDEX_LOG_LEVEL)")
	fs.StringVar(&c.logFormat, "log-format", env("MEMINDEX_LOG_FORMAT", "text"), "text or json (MEMINDEX_LOG_FORMAT)")
	fs.IntVar(&c.searchPool, "search-workers", envInt("MEMINDEX_SEARCH_WORKERS", 0), "searches run at once; 0 = 2 × CPUs (MEMINDEX_SEARCH_WORKERS)")
	fs.IntVar(&c.maxPending, "search-pending", envInt("MEMINDEX_SEARCH_PENDING", 256), "searches queued before 429 (MEMINDEX_SEARCH_PENDING)")
	fs.DurationVar(&c.snapshotInterval, "snapshot-interval", envDuration("MEMINDEX_SNAPSHOT_INTERVAL", defaultSnapshotInterval), "how often the shards this worker owns are snapshotted to the MEMINDEX_SNAPSHOTS object store (a new or lost shard then restores from it and replays only the events after it); 0: off (MEMINDEX_SNAPSHOT_INTERVAL)")
	registerHTTPFlags(fs, &c)
	c.limits.register(fs)
	sqliteVecEnv, sqliteVecErr := envBool("MEMINDEX_SQLITE_VEC")
	sqliteVec := fs.Bool("sqlite-vec", sqliteVecEnv || os.Getenv("MEMINDEX_SQLITE_VEC") == "", "keep vectors in sqlite-vec's vec0 table; false keeps them in a plain table searched by the in-process Go scan, as when sqlite-vec fails (status and health then say go-scan) (MEMINDEX_SQLITE_VEC)")
	if err := parseFlags(ctx, fs, args); err != nil { // flags > env > --config file > defaults (config.go)
		return err
	}
	if err := c.limits.validate(); err != nil {
		return err
	}
	c.contextMsgs = contextMessages(c.contextMsgs)
	if sqliteVecErr != nil {
		return sqliteVecErr
	}
	if memLimitErr != nil {
		return memLimitErr
	}
	c.noSqliteVec = !*sqliteVec
	if authErr != nil {
		return authErr
	}
	log, err := newLogger(c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	c.httpExplicit = httpFlagSet(fs)
	return serveTraced(ctx, c, log)
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(withTraceIDs(slog.NewTextHandler(os.Stderr, opts))), nil
	case "json":
		return slog.New(withTraceIDs(slog.NewJSONHandler(os.Stderr, opts))), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// serve runs a worker until ctx ends, then shuts it down.
func serve(ctx context.Context, c serveConfig, log *slog.Logger) error {
	n, err := startNode(ctx, c, log)
	if err != nil {
		return err
	}
	return n.run(ctx)
}

// node is one running worker with everything it started.
type node struct {
	cfg      serveConfig
	log      *slog.Logger
	embedded *server.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	cache    *store.Cache
	cached   *embedder.Cached
	breaker  *embedder.Breaker // nil for the built-in embedder
	own      ownership         // ownership.go
	// serving is the generation searches use; next, when not nil, is being
	// built for another vector space (see generation.go). genMu guards both.
	genMu    sync.RWMutex
	serving  *generation
	next     *generation
	routes   []atomic.Pointer[route]
	switched atomic.Int64
	svc      *query.Service
	url      string
	closers  []func()
	// Observability (http.go, metrics.go): started is set once the node
	// serves, draining once it shuts down.
	metrics  *nodeMetrics
	httpAddr string
	started  atomic.Bool
	draining atomic.Bool
}

// startNode starts, in order: the embedded NATS server (unless a server is
// named), the connection, the streams, the embedding cache and embedder, the
// shards, the consumers and the micro service. On error it undoes what it
// started.
func startNode(ctx context.Context, c serveConfig, log *slog.Logger) (_ *node, err error) {
	n := &node{cfg: c, log: log}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	release, err := lockData(c.data)
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, release)
	if err := n.startHTTP(); err != nil {
		return nil, err
	}
	c.provider.observe = n.metrics.observeEmbed
	emb, info, err := newEmbedder(c.provider)
	if err != nil {
		return nil, err
	}
	if info.Provider == "builtin" { // remote providers report their HTTP requests
		emb = embedder.NewObserved(emb, n.metrics.observeEmbed)
	}
	if c.conn.server == "" && c.conn.context == "" {
		var auth *embeddedAuth
		if c.auth {
			if auth, err = embeddedAuthFor(c.data, &c.conn); err != nil {
				return nil, err
			}
		}
		if n.embedded, err = startEmbedded(c.listen, filepath.Join(c.data, "nats"), auth); err != nil {
			return nil, err
		}
		n.closers = append(n.closers, func() { n.embedded.Shutdown(); n.embedded.WaitForShutdown() })
		c.conn.server = n.embedded.ClientURL()
		log.Info("embedded NATS server with JetStream", "url", c.conn.server, "store", filepath.Join(c.data, "nats"), "auth", c.auth)
		if auth != nil {
			log.Info("embedded NATS server requires authentication: connect with --nkey (memindex and the nats CLI)",
				"admin_nkey", auth.AdminSeed, "worker_nkey", auth.WorkerSeed)
		}
	} else if c.auth {
		return nil, errors.New("--auth configures the embedded NATS server; with --server or --context the server's own configuration decides who may connect (see deployments/nats-tenants.conf)")
	}
	n.url = c.conn.server
	c.conn.log = log
	if n.nc, err = c.conn.connect("memindex worker " + c.worker); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, n.nc.Close)
	if n.js, err = jetstream.New(n.nc); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if c.partitions, err = consumer.EnsureStreams(sctx, n.js, consumer.StreamConfig{Partitions: c.partitions, Replicas: c.streamReplicas}); err != nil {
		if errors.Is(err, consumer.ErrReplicasReduced) || errors.Is(err, consumer.ErrReplicasUnavailable) {
			return nil, fmt.Errorf("--stream-replicas %d (MEMINDEX_STREAM_REPLICAS): %w", c.streamReplicas, err)
		}
		return nil, err
	}
	n.cfg.partitions = c.partitions
	if err := n.cfg.applyMemoryLimit(c.partitions); err != nil {
		return nil, err
	}
	if err := n.initOwnership(); err != nil {
		return nil, err
	}

	if n.cache, err = store.OpenCacheWith(ctx, filepath.Join(c.data, "cache.db"), store.CacheConfig{MaxBytes: c.cacheMax}); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, func() { n.cache.Close(context.Background()) })
	inner := emb
	if info.Provider != "builtin" {
		// A remote provider: requests within its rate limits, and a breaker
		// that fails fast while it is down (the backfill probes it).
		n.breaker = embedder.NewBreaker(embedder.NewRateLimited(emb, c.rateLimit), c.breaker)
		inner = n.breaker
	}
	n.cached = embedder.NewCached(embedder.NewBatched(inner, embedder.PoolConfig{BatchSize: c.embedBatch, Concurrency: c.embedConc}), n.cache)

	if err := n.openGenerations(ctx, sctx, info); err != nil {
		return nil, err
	}

	router := query.RouterFunc(func(ns string) (query.Searcher, int, error) {
		p := memindex.Partition(ns, c.partitions)
		if p >= len(n.routes) {
			return nil, p, query.ErrNotOwned
		}
		r := n.routes[p].Load()
		if r == nil {
			return nil, p, n.notHeld(p)
		}
		return r.searcher, p, nil
	})
	engine := query.NewEngine(query.EngineConfig{RRFK: rrfK(c.rrfK, info), RRFVectorWeight: rrfVectorWeight(c.rrfVector, info), RRFKeywordWeight: c.rrfKeyword}, router, n.cached)
	n.svc, err = query.NewService(n.nc, query.ServiceConfig{
		Version: serviceVersion, Workers: c.searchPool, MaxPending: c.maxPending, Worker: c.worker,
		Metrics: n.metrics, TracerProvider: c.tracer,
		Limits: c.limits.limits, RatePerNamespace: c.limits.rate,
		Partitions: c.partitions, Holds: n.holds,
	}, engine, n.status)
	if err != nil {
		return nil, err
	}
	if c.group != "" {
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
	log.Info("memindex worker ready", "worker", c.worker, "partitions", c.partitions,
		"embedder", info.Provider, "model", info.Model, "dims", info.Dims, "data", c.data)
	return n, nil
}

func (n *node) status(ctx context.Context) memindex.StatusResponse {
	info := n.cached.Info()
	st := n.cached.Stats()
	cs, _ := n.cache.Stats(ctx) // in-memory totals; only fails after Close
	n.genMu.RLock()
	serving := n.serving
	n.genMu.RUnlock()
	parts := serving.worker.Status(ctx)
	resp := memindex.StatusResponse{
		Type: "status", Version: 1, Worker: n.cfg.worker, Ready: serving.worker.Ready(),
		Embedder: memindex.EmbedderStatus{Provider: info.Provider, Model: info.Model, Dims: info.Dims,
			CacheHits: st.Hits, CacheMisses: st.Misses, CacheEntries: cs.Entries, CacheBytes: cs.Bytes,
			CacheMaxBytes: cs.MaxBytes, CacheEvictions: cs.Evictions},
		Partitions: parts, Switch: n.switchStatus(ctx),
		Memory: n.cfg.memoryStatus(parts),
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

// run consumes until ctx ends, then shuts down in reverse order of start:
// intake stops and the batch in hand commits and is acknowledged, the service
// stops, the connection drains, shards and cache close, the embedded server
// stops.
func (n *node) run(ctx context.Context) error {
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
	if err := n.svc.Stop(stopCtx); err != nil {
		n.log.Error("stop service", "err", err)
	}
	n.svc = nil
	// Acks are fire-and-forget publishes: flush them before closing.
	if err := n.nc.FlushTimeout(5 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		n.log.Error("flush NATS connection", "err", err)
	}
	n.close()
	return runErr
}

// close undoes startNode, last started first.
func (n *node) close() {
	if n.svc != nil {
		_ = n.svc.Stop(context.Background())
	}
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
	n.closers = nil
}

// Session chunking defaults: every message is one chunk (a hit is what an
// agent pays for: one message, never its neighbours), and only a message of
// more than defaultChunkTokens is indexed in pieces; the context column (its
// date, the two messages before it) recovers what bigger windows gave to
// ranking (BENCHMARKS.md).
const defaultChunkTokens = 400

// defaultConsumerInactive is how long an unused durable consumer lives
// (--consumer-inactive): long enough that a worker restarted, upgraded or
// moved to another machine finds its consumers still there, short enough
// that a gone worker's replicated consumers do not stay in the cluster.
const defaultConsumerInactive = time.Hour

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

// vectorSpace names the space of info's vectors for the shards.
func vectorSpace(info embedder.Info) string {
	s := info.Provider + "/" + info.Model + "/" + strconv.Itoa(info.Dims)
	if info.BaseURL != "" && info.Provider != "builtin" {
		s += "@" + info.BaseURL
	}
	return s
}

func shardPath(dir string, p int) string {
	return filepath.Join(dir, "p"+strconv.Itoa(p)+".db")
}

// serviceVersion is the micro service version (micro requires semver).
const serviceVersion = "0.1.0"

// startEmbedded starts an in-process nats-server with JetStream on listen,
// storing under dir. With auth, only auth's nkey users may connect.
func startEmbedded(listen, dir string, auth *embeddedAuth) (*server.Server, error) {
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
	if auth != nil {
		opts.Nkeys = auth.users
	}
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
