package node

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/query"
)

// Prometheus client_golang rather than OpenTelemetry metrics with the
// Prometheus exporter: /metrics is the only way metrics leave the worker, the
// text format is produced directly (no name translation, no units appended),
// a Registry per node keeps parallel tests apart, and a Collector computes
// the gauges from the node's status at scrape time, with no second SDK.

// Metric label names; partition numbers are the only per-data labels:
// namespaces (tenants) never are.
const (
	labelPartition = "partition"
	labelOutcome   = "outcome"
	labelProvider  = "provider"
	labelCode      = "code"
	labelLeg       = "leg"
	labelEndpoint  = "endpoint"
	labelReason    = "reason"
)

// Values of labelLeg.
const (
	legVector  = "vector"
	legKeyword = "keyword"
	legTotal   = "total"
)

// nodeMetrics holds a node's registry and the instruments the packages
// report to through their hooks: it satisfies consumer.Metrics and
// query.Metrics, and its observeEmbed is the embedder's RequestObserver.
type nodeMetrics struct {
	reg *prometheus.Registry

	ingested *prometheus.CounterVec
	// sessionMessages counts the session messages of the indexed events.
	sessionMessages prometheus.Counter
	batchSeconds    prometheus.Histogram
	embedRequests   *prometheus.CounterVec
	embedSeconds    *prometheus.HistogramVec
	searchSeconds   *prometheus.HistogramVec
	rejected        *prometheus.CounterVec
	shardErrors     *prometheus.CounterVec
	sqliteBusy      prometheus.Counter
}

var (
	_ consumer.Metrics     = (*nodeMetrics)(nil)
	_ query.Metrics        = (*nodeMetrics)(nil)
	_ prometheus.Collector = (*statusCollector)(nil)
)

// newNodeMetrics returns the instruments of a node registered in a new
// registry, with the Go runtime and process collectors, and the gauges of
// status, read at each scrape (status nil: none).
func newNodeMetrics(status *statusCollector) *nodeMetrics {
	m := &nodeMetrics{
		reg: prometheus.NewRegistry(),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memindex_ingest_messages_total",
			Help: "Events (stream messages) taken from the stream, by outcome: indexed (applied), dlq (never applicable, dead-lettered), duplicate (redelivered, already applied). A messages event counts one.",
		}, []string{labelOutcome}),
		sessionMessages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memindex_session_messages_indexed_total",
			Help: "Session messages the indexed events applied: one a message event, each of a messages event's.",
		}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "memindex_batch_duration_seconds",
			Help:    "Time from fetching a batch of events to acknowledging it (decode, chunk, embed inline, commit).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1ms .. 33s
		}),
		embedRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memindex_embed_requests_total",
			Help: "Requests to the embedding provider (each retry counts), by provider and code: the HTTP status, timeout, canceled or error; ok or error for the built-in embedder.",
		}, []string{labelProvider, labelCode}),
		embedSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "memindex_embed_request_duration_seconds",
			Help:    "Duration of one request to the embedding provider.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{labelProvider}),
		searchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "memindex_search_duration_seconds",
			Help:    "Search latency by leg: vector and keyword (each leg that ran) and total (receipt to reply, every search that ran).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms .. 16s
		}, []string{labelLeg}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memindex_rejected_requests_total",
			Help: "Error replies of the search and read endpoints, by reason: bad_request, not_found, too_large, overloaded, unavailable, internal.",
		}, []string{labelEndpoint, labelReason}),
		shardErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memindex_shard_errors_total",
			Help: "Failed shard reads and writes of ingestion (a commit is retried until it succeeds).",
		}, []string{labelPartition}),
		sqliteBusy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memindex_sqlite_busy_total",
			Help: "Shard operations of ingestion that failed because SQLite was busy or locked past busy_timeout.",
		}),
	}
	for _, o := range []string{consumer.OutcomeIndexed, consumer.OutcomeDLQ, consumer.OutcomeDuplicate} {
		m.ingested.WithLabelValues(o)
	}
	m.reg.MustRegister(m.ingested, m.sessionMessages, m.batchSeconds, m.embedRequests, m.embedSeconds, m.searchSeconds,
		m.rejected, m.shardErrors, m.sqliteBusy,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if status != nil {
		m.reg.MustRegister(status)
	}
	return m
}

// BatchDone counts a batch's events by outcome and its duration.
func (m *nodeMetrics) BatchDone(_ int, s consumer.BatchStats) {
	m.ingested.WithLabelValues(consumer.OutcomeIndexed).Add(float64(s.Indexed))
	m.ingested.WithLabelValues(consumer.OutcomeDLQ).Add(float64(s.DLQ))
	m.ingested.WithLabelValues(consumer.OutcomeDuplicate).Add(float64(s.Duplicate))
	m.sessionMessages.Add(float64(s.Messages))
	m.batchSeconds.Observe(s.Duration.Seconds())
}

// ShardError counts a failed shard operation, and SQLite busy errors apart.
func (m *nodeMetrics) ShardError(partition int, err error) {
	m.shardErrors.WithLabelValues(strconv.Itoa(partition)).Inc()
	if isBusy(err) {
		m.sqliteBusy.Inc()
	}
}

// Searched observes a search's total time and the time of each leg that ran.
func (m *nodeMetrics) Searched(resp *memindex.SearchResponse, took time.Duration, err error) {
	m.searchSeconds.WithLabelValues(legTotal).Observe(took.Seconds())
	if resp != nil {
		if resp.Legs.Vector.Ran {
			m.searchSeconds.WithLabelValues(legVector).Observe(resp.Legs.Vector.TookMs / 1000)
		}
		if resp.Legs.Keyword.Ran {
			m.searchSeconds.WithLabelValues(legKeyword).Observe(resp.Legs.Keyword.TookMs / 1000)
		}
	}
	if isBusy(err) {
		m.sqliteBusy.Inc()
	}
}

// Rejected counts an error reply.
func (m *nodeMetrics) Rejected(endpoint, reason string) {
	m.rejected.WithLabelValues(endpoint, reason).Inc()
}

// observeEmbed counts a request to the embedding provider.
func (m *nodeMetrics) observeEmbed(provider, code string, took time.Duration) {
	m.embedRequests.WithLabelValues(provider, code).Inc()
	m.embedSeconds.WithLabelValues(provider).Observe(took.Seconds())
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	s := err.Error()
	return strings.Contains(s, "database is locked") || strings.Contains(s, "database table is locked")
}

// statusCollector turns the node's status into gauges at scrape time:
// nothing is counted twice and nothing is kept between scrapes.
type statusCollector struct {
	n *Node

	pending, ackPending, applied, waiting, wal, checkpoints, dlq      *prometheus.Desc
	cacheHits, cacheMisses, breaker                                   *prometheus.Desc
	memLimit, memHeap, memRSS, memSQLite, memPull, memInflight, memGC *prometheus.Desc
	indexes                                                           *prometheus.Desc
}

func newStatusCollector(n *Node) *statusCollector {
	part := []string{labelPartition}
	return &statusCollector{
		n:           n,
		pending:     prometheus.NewDesc("memindex_consumer_pending", "Events in the stream not yet delivered to the partition's consumer (the lag).", part, nil),
		ackPending:  prometheus.NewDesc("memindex_consumer_ack_pending", "Events delivered to the partition's consumer and not yet acknowledged.", part, nil),
		applied:     prometheus.NewDesc("memindex_applied_sequence", "Last stream sequence the partition's shard applied.", part, nil),
		waiting:     prometheus.NewDesc("memindex_chunks_waiting_vectors", "Chunks committed without a vector, waiting for the backfill (keyword search covers them).", part, nil),
		wal:         prometheus.NewDesc("memindex_sqlite_wal_bytes", "Size of the partition shard's SQLite write-ahead log file.", part, nil),
		checkpoints: prometheus.NewDesc("memindex_sqlite_checkpoints_total", "WAL checkpoints the partition shard's background checkpointer ran since the shard opened.", part, nil),
		dlq:         prometheus.NewDesc("memindex_dlq_messages", "Dead-lettered events of the partition in MEMINDEX_DLQ.", part, nil),
		cacheHits:   prometheus.NewDesc("memindex_embed_cache_hits_total", "Texts whose vector the embedding cache held.", nil, nil),
		cacheMisses: prometheus.NewDesc("memindex_embed_cache_misses_total",
			"Texts the embedding cache did not hold (embedded by the provider).", nil, nil),
		memLimit:    prometheus.NewDesc("memindex_memory_limit_bytes", "The worker's --memory-limit (0: none).", nil, nil),
		memHeap:     prometheus.NewDesc("memindex_memory_heap_bytes", "Go heap in use (live and not yet collected objects).", nil, nil),
		memGC:       prometheus.NewDesc("memindex_memory_gc_percent", "The collector's GOGC (-1: off).", nil, nil),
		memRSS:      prometheus.NewDesc("memindex_memory_rss_bytes", "Resident memory of the worker process.", nil, nil),
		memSQLite:   prometheus.NewDesc("memindex_sqlite_cache_bound_bytes", "Most the SQLite page caches of the worker's shards may hold together.", nil, nil),
		memPull:     prometheus.NewDesc("memindex_pull_buffer_bound_bytes", "Most the pull buffers of the worker's partitions may hold together (events received ahead of the batch being collected).", nil, nil),
		memInflight: prometheus.NewDesc("memindex_ingest_inflight_bound_bytes", "Most event payload the batches of the worker's partitions may hold together while collected, prepared or committed (0: no bound).", nil, nil),
		indexes:     prometheus.NewDesc("memindex_index_bytes", "Estimated heap of a partition shard's in-memory index (keyword or vector).", []string{labelPartition, "index"}, nil),
		breaker:     prometheus.NewDesc("memindex_breaker_state", "The provider's circuit breaker: 0 closed, 1 half-open, 2 open (absent for the built-in embedder).", []string{labelProvider}, nil),
	}
}

// Describe sends the descriptions of the status gauges.
func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.ackPending, c.applied, c.waiting, c.wal, c.checkpoints, c.dlq, c.cacheHits, c.cacheMisses, c.breaker, c.memLimit, c.memHeap, c.memRSS, c.memSQLite, c.memPull, c.memInflight, c.memGC, c.indexes} {
		ch <- d
	}
}

// Collect reads the node's status; before the node has started, nothing.
func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	if !n.started.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	st := n.status(ctx)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	shards := n.shardsNow()
	for _, p := range st.Partitions {
		l := strconv.Itoa(p.Partition)
		gauge(c.pending, float64(p.Pending), l)
		gauge(c.ackPending, float64(p.AckPending), l)
		gauge(c.applied, float64(p.AppliedSeq), l)
		gauge(c.waiting, float64(p.VectorsWaiting), l)
		gauge(c.dlq, float64(p.DLQ), l)
		ch <- prometheus.MustNewConstMetric(c.checkpoints, prometheus.CounterValue, float64(p.Checkpoints), l)
		gauge(c.indexes, float64(p.KeywordIndexBytes), l, "keyword")
		gauge(c.indexes, float64(p.VectorIndexBytes), l, "vector")
		if sh, ok := shards[p.Partition]; ok {
			var size int64
			if fi, err := os.Stat(sh.Path() + "-wal"); err == nil {
				size = fi.Size()
			}
			gauge(c.wal, float64(size), l)
		}
	}
	if m := st.Memory; m != nil {
		gauge(c.memLimit, float64(m.LimitBytes))
		gauge(c.memHeap, float64(m.HeapBytes))
		gauge(c.memRSS, float64(m.RSSBytes))
		gauge(c.memSQLite, float64(m.SQLiteCacheBytes))
		gauge(c.memPull, float64(m.PullBufferBytes))
		gauge(c.memInflight, float64(m.InflightBytes))
		gauge(c.memGC, float64(m.GCPercent))
	}
	ch <- prometheus.MustNewConstMetric(c.cacheHits, prometheus.CounterValue, float64(st.Embedder.CacheHits))
	ch <- prometheus.MustNewConstMetric(c.cacheMisses, prometheus.CounterValue, float64(st.Embedder.CacheMisses))
	if n.breaker != nil {
		v := map[string]float64{embedder.BreakerClosed: 0, embedder.BreakerHalfOpen: 1, embedder.BreakerOpen: 2}[n.breaker.State().State]
		gauge(c.breaker, v, st.Embedder.Provider)
	}
}

// statusTimeout bounds reading the node's status for a scrape or a probe.
const statusTimeout = 5 * time.Second
