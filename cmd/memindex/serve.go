package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"memindex/embedder"
	"memindex/internal/cliconfig"
	"memindex/internal/secret"
	"memindex/internal/telemetry"
	"memindex/node"
)

// serveFlags is serve's flag set and the node configuration it fills; the
// defaults come from node.DefaultConfig, so the flags cannot drift from
// what a node started by code gets.
type serveFlags struct {
	fs        *flag.FlagSet
	cfg       node.Config
	conn      connFlags
	provider  providerFlags
	memLimit  cliconfig.AutoSize
	limits    limitFlags // limits.go
	sqliteVec bool
	logLevel  string
	logFormat string
	// envErrs are environment values that are not of their flag's type.
	envErrs []error
}

// newServeFlags registers serve's flags, each defaulting to its environment
// variable or else node.DefaultConfig's value.
func newServeFlags() *serveFlags {
	d := node.DefaultConfig()
	host, _ := os.Hostname()
	if host == "" {
		host = d.Worker
	}
	s := &serveFlags{cfg: d, fs: newFlagSet("serve", "[flags]")}
	fs, c := s.fs, &s.cfg
	s.conn.register(fs, "")
	fs.StringVar(&c.Listen, "listen", env("MEMINDEX_LISTEN", d.Listen), "address of the embedded NATS server when --server is not set (MEMINDEX_LISTEN)")
	fs.BoolVar(&c.Auth, "auth", s.envBool("MEMINDEX_AUTH", d.Auth), "embedded NATS server: require authentication with nkeys generated under DATA/auth on first start, reused after (MEMINDEX_AUTH)")
	fs.StringVar(&c.Data, "data", env("MEMINDEX_DATA", d.Data), "data directory: shards, embedding cache, embedded NATS store (MEMINDEX_DATA)")
	fs.IntVar(&c.PartitionCount, "partition-count", envInt("MEMINDEX_PARTITION_COUNT", d.PartitionCount), "partition count P of a new stream (0: the existing stream's, or 16); fixed for the life of the stream (MEMINDEX_PARTITION_COUNT)")
	fs.StringVar(&c.Partitions, "partitions", env("MEMINDEX_PARTITIONS", d.Partitions), "partitions this worker owns: all, or a list like 0-7 or 0,3,5-6; searches of the others are forwarded to their owners (MEMINDEX_PARTITIONS)")
	fs.StringVar(&c.Group, "group", env("MEMINDEX_GROUP", d.Group), "dynamic group: workers of one group share the partitions through leases in a NATS KV bucket, and take over a stopped or dead worker's (MEMINDEX_GROUP)")
	fs.IntVar(&c.Replicas, "replicas", envInt("MEMINDEX_REPLICAS", d.Replicas), "workers of the group holding each partition, each in its own shard file; searches are balanced over the ready ones (MEMINDEX_REPLICAS)")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", envDuration("MEMINDEX_LEASE_TTL", d.LeaseTTL), "partition lease TTL in a group: a dead worker's partitions move after it; a worker stops writing TTL/2 after its last renewal (MEMINDEX_LEASE_TTL)")
	fs.DurationVar(&c.ConsumerInactive, "consumer-inactive", envDuration("MEMINDEX_CONSUMER_INACTIVE", d.ConsumerInactive), "JetStream deletes a partition's durable consumer after nobody pulled from it for this long (a worker stopped for good, a partition moved away); harmless, a worker re-creates its consumers from its shards when it starts; 0 keeps them forever (MEMINDEX_CONSUMER_INACTIVE)")
	fs.IntVar(&c.StreamReplicas, "stream-replicas", envInt("MEMINDEX_STREAM_REPLICAS", d.StreamReplicas), "replicas of the event and dead-letter streams: 3 on a 3-node JetStream cluster, 1 on a single server; 0 keeps the existing streams' (1 for new ones); never lowered (MEMINDEX_STREAM_REPLICAS)")
	s.provider.register(fs, d.Embedder)
	fs.Float64Var(&c.RRFVectorWeight, "rrf-vector-weight", d.RRFVectorWeight, "weight of the vector leg in RRF fusion; 0: 0.05 with the built-in embedder (a lexical model, much weaker than BM25 with context: it breaks ties and adds candidates; BENCHMARKS.md), 1 with a provider's model")
	fs.Float64Var(&c.RRFKeywordWeight, "rrf-keyword-weight", d.RRFKeywordWeight, "weight of the keyword leg in RRF fusion")
	fs.Float64Var(&c.RRFK, "rrf-k", d.RRFK, "the k of RRF, score = Σ weight/(k + rank); 0: 10 with the built-in embedder (trust the keyword leg's top ranks), 60 with a provider's model")
	registerStackFlags(fs, c, d)
	s.memLimit = cliconfig.AutoSize{Auto: true}
	if v := os.Getenv("MEMINDEX_MEMORY_LIMIT"); v != "" {
		if err := s.memLimit.Set(v); err != nil {
			s.envErrs = append(s.envErrs, fmt.Errorf("MEMINDEX_MEMORY_LIMIT: %w", err))
		}
	}
	fs.Var(&s.memLimit, "memory-limit", "bound of the worker's memory, a `size` such as 2GiB: a quarter goes to the SQLite page caches of the partitions it may hold (no file mapping), the rest is the Go heap's soft limit, which holds the keyword and vector indexes; status reports the split and what is used; auto: half of the machine's memory, or of its cgroup's limit when lower; 0: no bound (SQLite defaults: 32,000 KiB a connection, 256 MiB mapped) (MEMINDEX_MEMORY_LIMIT)")
	fs.StringVar(&c.Worker, "worker", env("MEMINDEX_WORKER", host), "this worker's name in status (MEMINDEX_WORKER)")
	fs.StringVar(&s.logLevel, "log-level", env("MEMINDEX_LOG_LEVEL", "info"), "debug, info, warn or error (MEMINDEX_LOG_LEVEL)")
	fs.StringVar(&s.logFormat, "log-format", env("MEMINDEX_LOG_FORMAT", "text"), "text or json (MEMINDEX_LOG_FORMAT)")
	fs.IntVar(&c.SearchWorkers, "search-workers", envInt("MEMINDEX_SEARCH_WORKERS", d.SearchWorkers), "searches run at once; 0 = 2 × CPUs (MEMINDEX_SEARCH_WORKERS)")
	fs.IntVar(&c.SearchPending, "search-pending", envInt("MEMINDEX_SEARCH_PENDING", d.SearchPending), "searches queued before 429 (MEMINDEX_SEARCH_PENDING)")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", envDuration("MEMINDEX_SNAPSHOT_INTERVAL", d.SnapshotInterval), "how often the shards this worker owns are snapshotted to the MEMINDEX_SNAPSHOTS object store (a new or lost shard then restores from it and replays only the events after it); 0: off (MEMINDEX_SNAPSHOT_INTERVAL)")
	fs.StringVar(&c.HTTP, "http", env("MEMINDEX_HTTP", d.HTTP), `address of the HTTP endpoints /metrics (Prometheus), /livez and /readyz; "off" disables them; use 0.0.0.0:9464 in a container (MEMINDEX_HTTP)`)
	fs.IntVar(&c.CommitConcurrency, "commit-concurrency", envInt("MEMINDEX_COMMIT_CONCURRENCY", d.CommitConcurrency), "partitions that commit a batch at once; a batch below --batch messages takes one of the first half only (at least 1), the rest are for partitions that are behind; the others' next batches wait, and grow, while theirs is built on the remaining cores; 0: the CPUs (MEMINDEX_COMMIT_CONCURRENCY)")
	fs.IntVar(&c.ReadyLag, "ready-lag", envInt("MEMINDEX_READY_LAG", d.ReadyLag), "events a partition may lag behind the stream and still be ready on /readyz (MEMINDEX_READY_LAG)")
	s.limits.register(fs, d.Limits, d.RatePerNamespace)
	fs.BoolVar(&s.sqliteVec, "sqlite-vec", s.envBool("MEMINDEX_SQLITE_VEC", d.SQLiteVec), "keep vectors in sqlite-vec's vec0 table; false keeps them in a plain table searched by the in-process Go scan, as when sqlite-vec fails (status and health then say go-scan) (MEMINDEX_SQLITE_VEC)")
	addConfigFlag(fs)
	return s
}

// registerStackFlags registers the flags of the embedder stack and the
// chunking that serve and rebuild share (rebuild must chunk as serve does).
func registerStackFlags(fs *flag.FlagSet, c *node.Config, d node.Config) {
	fs.IntVar(&c.RateLimit.RequestsPerMinute, "embed-rpm", envInt("MEMINDEX_EMBED_RPM", d.RateLimit.RequestsPerMinute), "provider requests per minute; 0: unlimited (MEMINDEX_EMBED_RPM)")
	fs.IntVar(&c.RateLimit.TokensPerMinute, "embed-tpm", envInt("MEMINDEX_EMBED_TPM", d.RateLimit.TokensPerMinute), "provider tokens per minute (estimated); 0: unlimited (MEMINDEX_EMBED_TPM)")
	fs.IntVar(&c.Breaker.Failures, "breaker-failures", envInt("MEMINDEX_BREAKER_FAILURES", d.Breaker.Failures), "consecutive provider failures that open the circuit breaker (MEMINDEX_BREAKER_FAILURES)")
	fs.DurationVar(&c.Breaker.Cooldown, "breaker-cooldown", d.Breaker.Cooldown, "how long an open breaker waits before a probe")
	fs.Int64Var(&c.CacheMaxBytes, "cache-max-bytes", int64(envInt("MEMINDEX_CACHE_MAX_BYTES", int(d.CacheMaxBytes))), "embedding cache size bound; least recently used entries go first; 0: unbounded (MEMINDEX_CACHE_MAX_BYTES)")
	fs.IntVar(&c.Batch, "batch", envInt("MEMINDEX_BATCH", d.Batch), "most messages applied in one transaction: an event counts one, a messages event its messages (MEMINDEX_BATCH)")
	fs.IntVar(&c.EmbedBatch, "embed-batch", envInt("MEMINDEX_EMBED_BATCH", d.EmbedBatch), "texts per embedding request (MEMINDEX_EMBED_BATCH)")
	fs.IntVar(&c.EmbedConcurrency, "embed-concurrency", envInt("MEMINDEX_EMBED_CONCURRENCY", d.EmbedConcurrency), "embedding requests in flight (MEMINDEX_EMBED_CONCURRENCY)")
	fs.IntVar(&c.ChunkTokens, "chunk-tokens", envInt("MEMINDEX_CHUNK_TOKENS", d.ChunkTokens), "most tokens of one indexed chunk: each session message is one chunk, a longer message is indexed in pieces and still returned whole; rebuild must use serve's (MEMINDEX_CHUNK_TOKENS)")
	fs.IntVar(&c.ChunkContext, "chunk-context", envInt("MEMINDEX_CHUNK_CONTEXT", d.ChunkContext), "messages before a session chunk indexed as its context (keyword weight 0.5, and embedded with it); 0: none; rebuild must use serve's (MEMINDEX_CHUNK_CONTEXT)")
}

// envBool registers an error for a MEMINDEX_* boolean that is not one and
// returns its value, or def when unset.
func (s *serveFlags) envBool(name string, def bool) bool {
	v, err := envBool(name, def)
	if err != nil {
		s.envErrs = append(s.envErrs, err)
	}
	return v
}

// config returns the node configuration of the parsed flags, validated.
func (s *serveFlags) config() (node.Config, error) {
	if len(s.envErrs) > 0 {
		return node.Config{}, s.envErrs[0]
	}
	if s.limits.envErr != nil {
		return node.Config{}, s.limits.envErr
	}
	c := s.cfg
	c.NATS = s.conn.Config
	c.Embedder = s.provider.config()
	c.MemoryLimit = s.memLimit.Bytes(node.AutoMemoryLimit)
	c.Limits, c.RatePerNamespace = s.limits.limits, s.limits.rate
	c.SQLiteVec = s.sqliteVec
	c.HTTPRequired = cliconfig.IsSet(s.fs, "http")
	return c, c.Validate()
}

func runServe(ctx context.Context, args []string) error {
	s := newServeFlags()
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	if _, err := cliconfig.Apply(s.fs, nil); err != nil { // flags > env > --config file > defaults (internal/cliconfig)
		return err
	}
	cfg, err := s.config()
	if err != nil {
		return err
	}
	log, err := newLogger(s.logLevel, s.logFormat)
	if err != nil {
		return err
	}
	tp, shutdown, err := telemetry.NewTracerProvider(ctx, os.Getenv, version)
	if err != nil {
		return err
	}
	if tp != nil {
		telemetry.LogErrors(log)
		log.Info("tracing on: spans go to the OTLP/HTTP endpoint of OTEL_EXPORTER_OTLP_*")
	}
	cfg.TracerProvider = tp
	err = serve(ctx, cfg, log)
	// Telemetry is flushed last, after the node has shut down.
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ferr := shutdown(fctx); ferr != nil {
		log.Warn("flush traces", "err", ferr)
	}
	return err
}

// serve runs a node until ctx ends, then shuts it down.
func serve(ctx context.Context, cfg node.Config, log *slog.Logger) error {
	n, err := node.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	return n.Run(ctx)
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(telemetry.WithTraceIDs(slog.NewTextHandler(os.Stderr, opts))), nil
	case "json":
		return slog.New(telemetry.WithTraceIDs(slog.NewJSONHandler(os.Stderr, opts))), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// providerFlags select and configure the embedding provider. Keys come only
// from the environment (the vendors' own variable names, or NAME_FILE
// holding the key), never from flags, so they stay out of process lists.
type providerFlags struct{ embedder.ProviderConfig }

func (p *providerFlags) register(fs *flag.FlagSet, d embedder.ProviderConfig) {
	fs.StringVar(&p.Name, "embedder", env("MEMINDEX_EMBEDDER", d.Name), "embedding provider: "+embedder.Providers+" (openai also for OpenAI-compatible servers with --base-url) (MEMINDEX_EMBEDDER)")
	fs.StringVar(&p.Model, "model", env("MEMINDEX_MODEL", d.Model), "provider model; empty: the provider's default (MEMINDEX_MODEL)")
	fs.StringVar(&p.BaseURL, "base-url", env("MEMINDEX_BASE_URL", d.BaseURL), "provider URL, e.g. a local OpenAI-compatible server; ollama defaults to OLLAMA_HOST (MEMINDEX_BASE_URL)")
	fs.IntVar(&p.Dims, "dims", envInt("MEMINDEX_DIMS", d.Dims), "vector dimension; 0: 384 for builtin, the model's own otherwise (MEMINDEX_DIMS)")
	fs.DurationVar(&p.Timeout, "embed-timeout", d.Timeout, "timeout of one provider request")
	fs.IntVar(&p.Retries, "embed-retries", envInt("MEMINDEX_EMBED_RETRIES", d.Retries), "retries of one provider request on 429, 5xx and timeouts; -1: none (MEMINDEX_EMBED_RETRIES)")
}

// config is the provider configuration with the keys of the environment
// and Ollama's OLLAMA_HOST.
func (p providerFlags) config() embedder.ProviderConfig {
	c := p.ProviderConfig
	c.Keys = envKeys
	if c.Name == "ollama" && c.BaseURL == "" {
		c.BaseURL = os.Getenv("OLLAMA_HOST")
	}
	return c
}

// envKeys reads a provider's API key from its vendor's environment
// variables (embedder.KeyEnv), or the files their NAME_FILE names.
func envKeys(provider string) (string, error) {
	return secret.Get(embedder.KeyEnv[provider]...)
}
