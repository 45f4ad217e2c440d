package node

import (
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"go.opentelemetry.io/otel/trace"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natsconn"
)

// Config is everything a node runs with. Start from DefaultConfig: every
// field's zero value means what its flag's 0 means (`memindex serve -h`),
// which is not always the default (ChunkContext 0 is no context, SQLiteVec
// false keeps vectors out of sqlite-vec). The errors of Validate and Open
// name the flags of `memindex serve`, the settings users know.
type Config struct {
	// NATS is the connection to an external server; with neither Server
	// nor Context set the node starts an embedded server on Listen.
	NATS natsconn.Config
	// Listen is the embedded server's address (--listen); port -1 picks a
	// free one.
	Listen string
	// Auth makes the embedded server require the nkeys generated under
	// Data/auth (--auth).
	Auth bool
	// Data is the data directory: shards, embedding cache, embedded NATS
	// store (--data). One node uses it at a time.
	Data string

	// PartitionCount is P of a new stream; 0: the existing stream's, or
	// memindex.DefaultPartitions (--partition-count).
	PartitionCount int
	// Partitions is the static owned set: "all" or a list like 0-7,9
	// (--partitions); "" is all.
	Partitions string
	// Group is the dynamic group whose leases share the partitions
	// (--group); "" is static ownership.
	Group string
	// Replicas is the holders per partition in a group (--replicas).
	Replicas int
	// LeaseTTL is a group's lease TTL (--lease-ttl); 0: consumer's default.
	LeaseTTL time.Duration
	// ConsumerInactive is how long JetStream keeps a durable consumer nobody
	// pulls from (--consumer-inactive); 0: forever.
	ConsumerInactive time.Duration
	// StreamReplicas is the event streams' replicas (--stream-replicas); 0
	// keeps the existing streams' (1 for new ones).
	StreamReplicas int

	// Embedder is the provider; the stack around it (embedder.NewStack)
	// takes RateLimit, Breaker, EmbedBatch and EmbedConcurrency.
	Embedder         embedder.ProviderConfig
	RateLimit        embedder.RateLimitConfig // --embed-rpm, --embed-tpm
	Breaker          embedder.BreakerConfig   // --breaker-failures, --breaker-cooldown
	EmbedBatch       int                      // texts per embedding request (--embed-batch)
	EmbedConcurrency int                      // embedding requests in flight (--embed-concurrency)
	// CacheMaxBytes bounds the embedding cache (--cache-max-bytes); 0:
	// unbounded.
	CacheMaxBytes int64
	// MemoryLimit bounds the worker's memory in bytes (--memory-limit): a
	// quarter to the SQLite page caches, the rest the Go heap's soft limit;
	// 0: no bound. serve's default is AutoMemoryLimit.
	MemoryLimit int64

	// RRFVectorWeight, RRFKeywordWeight and RRFK tune fusion
	// (--rrf-vector-weight, --rrf-keyword-weight, --rrf-k); a vector weight
	// or k of 0 takes the embedder's default (builtinRRFVectorWeight and
	// builtinRRFK for the built-in one).
	RRFVectorWeight  float64
	RRFKeywordWeight float64
	RRFK             float64

	// Batch is the most events applied in one transaction (--batch).
	Batch int
	// CommitConcurrency is the most partitions that commit a batch at once
	// (--commit-concurrency); 0: the CPUs. A batch below Batch messages
	// takes one of the first half only (consumer.Config.CommitConcurrency).
	CommitConcurrency int
	// ChunkTokens is the most tokens of one indexed chunk (--chunk-tokens).
	ChunkTokens int
	// ChunkContext is the messages before a session chunk indexed as its
	// context (--chunk-context); 0: none.
	ChunkContext int

	// Worker is this worker's name in status and consumer names (--worker).
	Worker string
	// SearchWorkers is the searches run at once (--search-workers); 0: 2 ×
	// CPUs.
	SearchWorkers int
	// SearchPending is the searches queued before 429 (--search-pending).
	SearchPending int
	// Limits cap what the worker accepts (--max-event-bytes and friends).
	Limits memindex.Limits
	// RatePerNamespace is the searches and reads a second per namespace
	// (--rate-per-namespace); 0: no limit.
	RatePerNamespace float64

	// HTTP is the address of /metrics, /livez and /readyz (--http); "" or
	// "off" disables them.
	HTTP string
	// HTTPRequired makes a taken HTTP address an error; otherwise the
	// endpoints are skipped with a warning (the default address).
	HTTPRequired bool
	// ReadyLag is the events a partition may lag and still be ready
	// (--ready-lag).
	ReadyLag int
	// TracerProvider traces ingest and search; nil: tracing off.
	TracerProvider trace.TracerProvider

	// SQLiteVec keeps vectors in sqlite-vec's vec0 table; false keeps them
	// in a plain table searched by the Go scan (--sqlite-vec).
	SQLiteVec bool
	// SnapshotInterval is how often owned shards are snapshotted
	// (--snapshot-interval); 0: off.
	SnapshotInterval time.Duration
}

// Defaults that are not a field's zero value.
const (
	// DefaultListen is the embedded NATS server's address.
	DefaultListen = "127.0.0.1:4222"
	// DefaultHTTP is the HTTP endpoints' address.
	DefaultHTTP = "127.0.0.1:9464"
	// DefaultReadyLag is the events a ready partition may lag.
	DefaultReadyLag = 1000
	// DefaultChunkTokens: every session message is one chunk (a hit is
	// what an agent pays for: one message, never its neighbours), and only
	// a message of more than this is indexed in pieces; the context column
	// (its date, the two messages before it) recovers what bigger windows
	// gave to ranking (BENCHMARKS.md).
	DefaultChunkTokens = 400
	// DefaultChunkContext is the messages before a chunk indexed with it.
	DefaultChunkContext = 2
	// DefaultConsumerInactive is how long an unused durable consumer lives:
	// long enough that a worker restarted, upgraded or moved finds its
	// consumers still there, short enough that a gone worker's replicated
	// consumers do not stay in the cluster.
	DefaultConsumerInactive = time.Hour
	// DefaultSnapshotInterval is how often owned shards are snapshotted.
	DefaultSnapshotInterval = 10 * time.Minute
	// DefaultCacheMaxBytes bounds the embedding cache.
	DefaultCacheMaxBytes = 1 << 30
)

// DefaultConfig returns the defaults of `memindex serve`: its flags take
// their defaults from here. Worker is "memindex"; serve names it after the
// host. MemoryLimit is AutoMemoryLimit, worked out at each call.
func DefaultConfig() Config {
	return Config{
		NATS:             natsconn.Config{Timeout: natsconn.DefaultTimeout},
		Listen:           DefaultListen,
		Data:             "./data",
		Partitions:       "all",
		Replicas:         1,
		LeaseTTL:         consumer.DefaultLeaseTTL,
		ConsumerInactive: DefaultConsumerInactive,
		Embedder:         embedder.ProviderConfig{Name: "builtin", Timeout: 30 * time.Second, Retries: 5},
		Breaker:          embedder.BreakerConfig{Failures: 5, Cooldown: 30 * time.Second},
		EmbedBatch:       64,
		EmbedConcurrency: 4,
		CacheMaxBytes:    DefaultCacheMaxBytes,
		MemoryLimit:      AutoMemoryLimit(),
		RRFKeywordWeight: 1,
		Batch:            1000,
		ChunkTokens:      DefaultChunkTokens,
		ChunkContext:     DefaultChunkContext,
		Worker:           "memindex",
		SearchPending:    256,
		Limits:           memindex.DefaultLimits(),
		HTTP:             DefaultHTTP,
		ReadyLag:         DefaultReadyLag,
		SQLiteVec:        true,
		SnapshotInterval: DefaultSnapshotInterval,
	}
}

// Validate reports every setting out of range, each naming its flag.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Data == "" {
		bad("--data: want a data directory")
	}
	if c.NATS.Server == "" && c.NATS.Context == "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			bad("--listen %q: %v", c.Listen, err)
		}
	}
	if c.PartitionCount < 0 {
		bad("--partition-count %d: want 0 (the stream's) or more", c.PartitionCount)
	}
	if c.Replicas < 0 {
		bad("--replicas %d: want 1 or more holders per partition", c.Replicas)
	}
	if c.LeaseTTL < 0 {
		bad("--lease-ttl %s: must not be negative", c.LeaseTTL)
	}
	if c.ConsumerInactive < 0 {
		bad("--consumer-inactive %s: want a duration of 0 (keep consumers forever) or more", c.ConsumerInactive)
	}
	if c.StreamReplicas < 0 {
		bad("--stream-replicas %d: must not be negative (0 keeps the streams')", c.StreamReplicas)
	}
	if c.Group != "" {
		if c.Partitions != "" && c.Partitions != "all" {
			bad("--partitions %q and --group %q: a worker of a dynamic group takes its partitions from the group's leases; drop one of the two", c.Partitions, c.Group)
		}
		if !memindex.ValidNamespace(c.Group) {
			bad("--group %q: want 1-64 characters of [A-Za-z0-9_-]", c.Group)
		}
	}
	if c.Batch < 1 {
		bad("--batch %d: want 1 or more events a transaction", c.Batch)
	}
	if c.CommitConcurrency < 0 {
		bad("--commit-concurrency %d: want 1 or more partitions committing at once, or 0 for the CPUs", c.CommitConcurrency)
	}
	if c.EmbedBatch < 1 {
		bad("--embed-batch %d: want 1 or more texts a request", c.EmbedBatch)
	}
	if c.EmbedConcurrency < 1 {
		bad("--embed-concurrency %d: want 1 or more requests in flight", c.EmbedConcurrency)
	}
	if c.ChunkTokens < 1 {
		bad("--chunk-tokens %d: want 1 or more tokens a chunk", c.ChunkTokens)
	}
	if c.ChunkContext < 0 {
		bad("--chunk-context %d: must not be negative (0: none)", c.ChunkContext)
	}
	if c.RateLimit.RequestsPerMinute < 0 || c.RateLimit.TokensPerMinute < 0 {
		bad("--embed-rpm %d, --embed-tpm %d: must not be negative (0: unlimited)", c.RateLimit.RequestsPerMinute, c.RateLimit.TokensPerMinute)
	}
	if err := c.Breaker.Validate(); err != nil {
		bad("--breaker-failures, --breaker-cooldown: %v", err)
	}
	if c.CacheMaxBytes < 0 {
		bad("--cache-max-bytes %d: must not be negative (0: unbounded)", c.CacheMaxBytes)
	}
	if c.MemoryLimit < 0 {
		bad("--memory-limit %d: must not be negative (0: no bound)", c.MemoryLimit)
	}
	for _, w := range []struct {
		flag string
		v    float64
	}{{"--rrf-vector-weight", c.RRFVectorWeight}, {"--rrf-keyword-weight", c.RRFKeywordWeight}, {"--rrf-k", c.RRFK}} {
		if w.v < 0 || math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			bad("%s %g: must be a number >= 0", w.flag, w.v)
		}
	}
	if c.SearchWorkers < 0 {
		bad("--search-workers %d: must not be negative (0: 2 × CPUs)", c.SearchWorkers)
	}
	if c.SearchPending < 0 {
		bad("--search-pending %d: must not be negative", c.SearchPending)
	}
	if c.ReadyLag < 0 {
		bad("--ready-lag %d: must not be negative", c.ReadyLag)
	}
	if c.SnapshotInterval < 0 {
		bad("--snapshot-interval %s: must not be negative (0: off)", c.SnapshotInterval)
	}
	errs = append(errs, validateLimits(c.Limits, c.RatePerNamespace))
	return errors.Join(errs...)
}

// validateLimits reports every limit out of range, naming its flag and what
// to set instead.
func validateLimits(l memindex.Limits, rate float64) error {
	var errs []error
	check := func(flag string, v, max int64, maxName string) {
		if v < 1 || v > max {
			errs = append(errs, fmt.Errorf("--%s %d: must be between 1 and %s (%d)", flag, v, maxName, max))
		}
	}
	check("max-event-bytes", int64(l.MaxEventBytes), memindex.MaxEventBytes, "the stream's max message size")
	check("max-text-bytes", int64(l.MaxTextBytes), int64(l.MaxEventBytes), "--max-event-bytes")
	check("max-query-bytes", int64(l.MaxQueryBytes), memindex.MaxRequestSize, "the search request size limit")
	check("max-k", int64(l.MaxK), memindex.MaxK, "the engine's candidate pool")
	if l.MaxSessionMessages < 0 {
		errs = append(errs, fmt.Errorf("--max-session-messages %d: must not be negative (0: no cap)", l.MaxSessionMessages))
	}
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		errs = append(errs, fmt.Errorf("--rate-per-namespace %g: must be a number >= 0 (0: no limit)", rate))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return l.Validate() // the same rules, in case they grow
}
