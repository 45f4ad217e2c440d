package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc"
	"go.opentelemetry.io/otel/trace"

	"memindex"
	"memindex/chunker"
	"memindex/embedder"
	"memindex/internal/failpoint"
	"memindex/store"
)

// Log attribute keys; they are stable (operators' queries rely on them).
const (
	attrPartition = "partition"
	attrSeq       = "stream_seq"
	attrNamespace = "namespace"
	attrReason    = "reason"
	attrErr       = "err"
	attrCount     = "count"
)

// Config sets up a Worker. The zero value of every field but Partitions has a
// sane default.
type Config struct {
	// Partitions are the partitions this worker holds from the start.
	Partitions []int
	// Dynamic lets the worker start with no partition: partitions come and
	// go with Add and Remove (a worker of a dynamic group, see lease.go).
	Dynamic bool
	// ConsumerPrefix starts the durable consumer names (default
	// DefaultConsumerPrefix). Two workers consuming the same partitions into
	// different shards (a new vector set being built) need different ones.
	ConsumerPrefix string
	// BatchSize is the most messages applied in one transaction: an event
	// counts one, a messages event its messages (the last event in may
	// take a batch past it).
	BatchSize int
	// BatchWait is how long to wait for more events once one has arrived.
	BatchWait time.Duration
	// MaxBatch is the most messages applied in one transaction, counted
	// as BatchSize counts them, while the commit stage is busy with the
	// batch before (the events that arrive meanwhile join the batch being
	// collected): a batch over many interleaved sessions costs the writer
	// about one page write per session touched, so bigger batches catch
	// up faster (default 8×BatchSize, at least BatchSize).
	MaxBatch int
	// MaxBatchBytes bounds the event payload of one batch (default 16 MiB).
	// A partition holds at most two batches in memory, one committing and
	// one prepared (decoded, planned, embedded: see fetch.go), beside the
	// pull buffer (PullBufferBytes).
	MaxBatchBytes int
	// PullBufferBytes bounds the events a partition's pull subscription
	// holds ahead of the batch being collected: at most 2×BatchSize
	// events and at most this many bytes of them as NATS counts them
	// (payload, headers, subject). Default DefaultPullBufferBytes; never
	// below the largest event the limits accept plus PullMargin, or an
	// event that size could never be delivered.
	PullBufferBytes int
	// InflightBytes bounds the event payload the batches of all the
	// worker's partitions hold together, being collected, prepared or
	// committed (0: no bound beyond MaxBatchBytes a batch; see
	// inflight.go). A worker under --memory-limit sets it from the Go
	// heap's limit.
	InflightBytes int64
	// CommitConcurrency is the most of the worker's partitions that
	// commit a batch at once (default: GOMAXPROCS): a partition holds a
	// slot for its batch's transaction and gives it back once that
	// commits, before the in-memory indexes take the batch. A batch of
	// fewer than BatchSize messages may take only one of the first half of
	// the slots (at least 1); the rest go to batches of BatchSize or more,
	// partitions that are behind (commitslots.go). A commit is CPU-bound
	// work in SQLite, and each partition's next batch is fetched, decoded,
	// planned and embedded on the other cores meanwhile (fetch.go); a
	// partition that waits for a slot gathers a bigger batch, which costs
	// less a message to commit. Status shows a partition waiting for one
	// (commitWaiting).
	CommitConcurrency int
	// Chunker configures session windows.
	Chunker chunker.Config
	// Markdown configures memory file sections.
	Markdown chunker.MarkdownConfig
	// Limits caps event size, text size and session length (zero fields:
	// memindex.DefaultLimits). An event over a limit is dead-lettered with
	// the field and the limit in its reason, never truncated.
	Limits memindex.Limits
	// EmbedTimeout bounds inline embedding of a batch's new chunks; past it
	// the chunks commit without vectors and the backfill embeds them later.
	EmbedTimeout time.Duration
	// InlineCooloff is how long batches skip inline embedding after it
	// failed or timed out once, so that a provider outage costs ingestion
	// one EmbedTimeout, not one per batch; the backfill keeps trying.
	InlineCooloff time.Duration
	// BackfillBatch is how many waiting chunks one backfill round embeds.
	BackfillBatch int
	// BackfillInterval is how often the backfill looks for waiting chunks.
	BackfillInterval time.Duration
	// AckWait is the consumer's ack wait; batches send progress heartbeats.
	AckWait time.Duration
	// InactiveThreshold is how long JetStream keeps a partition's durable
	// consumer once nobody pulls from it: the consumers of a worker that
	// stopped for good (a renamed or removed worker, a partition that
	// moved, a name scheme of an older version) go by themselves instead of
	// costing the cluster a replicated consumer each forever. Deleting one
	// loses nothing: a worker positions its consumer from its shard's
	// applied sequence whenever it starts consuming a partition. 0 keeps
	// consumers forever.
	InactiveThreshold time.Duration
	// Logger receives operational logs; nil discards them. Records of a
	// batch carry its context, so a handler can add the trace id.
	Logger *slog.Logger
	// Metrics receives ingestion measurements; nil takes none.
	Metrics Metrics
	// TracerProvider traces ingestion (see trace.go); nil is off, at no
	// cost on the ingest path.
	TracerProvider trace.TracerProvider
}

// Validate fills defaults and checks the values.
func (c *Config) Validate() error {
	if len(c.Partitions) == 0 && !c.Dynamic {
		return errors.New("config: no partitions to own")
	}
	if c.ConsumerPrefix == "" {
		c.ConsumerPrefix = DefaultConsumerPrefix
	}
	if c.BatchSize == 0 {
		c.BatchSize = 1000
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("config: batch size must be positive, got %d", c.BatchSize)
	}
	if c.BatchWait == 0 {
		c.BatchWait = 5 * time.Millisecond
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 8 * c.BatchSize
	}
	if c.MaxBatch < c.BatchSize {
		return fmt.Errorf("config: max batch %d is below the batch size %d", c.MaxBatch, c.BatchSize)
	}
	if c.CommitConcurrency == 0 {
		c.CommitConcurrency = runtime.GOMAXPROCS(0)
	}
	if c.CommitConcurrency < 1 {
		return fmt.Errorf("config: commit concurrency must be positive, got %d", c.CommitConcurrency)
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = 16 << 20
	}
	if c.MaxBatchBytes < 1 {
		return fmt.Errorf("config: max batch bytes must be positive, got %d", c.MaxBatchBytes)
	}
	if c.InflightBytes < 0 {
		return fmt.Errorf("config: in-flight bytes must not be negative, got %d", c.InflightBytes)
	}
	if c.PullBufferBytes < 0 {
		return fmt.Errorf("config: pull buffer bytes must not be negative, got %d", c.PullBufferBytes)
	}
	c.Chunker = c.Chunker.WithDefaults()
	if err := c.Chunker.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.Markdown = c.Markdown.WithDefaults()
	if err := c.Markdown.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.Limits = c.Limits.WithDefaults()
	c.PullBufferBytes = PullBufferBound(c.PullBufferBytes, c.Limits)
	if c.EmbedTimeout == 0 {
		c.EmbedTimeout = 5 * time.Second
	}
	if c.InlineCooloff == 0 {
		c.InlineCooloff = 30 * time.Second
	}
	if c.BackfillBatch == 0 {
		c.BackfillBatch = 256
	}
	if c.BackfillInterval == 0 {
		c.BackfillInterval = time.Second
	}
	if c.AckWait == 0 {
		c.AckWait = 2 * time.Minute
	}
	if c.InactiveThreshold < 0 {
		return fmt.Errorf("config: consumer inactive threshold must not be negative, got %s", c.InactiveThreshold)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = MetricsFuncs{}
	}
	return nil
}

// Worker consumes the partitions it owns and applies them to their shards.
type Worker struct {
	js  jetstream.JetStream
	cfg Config
	emb embedder.Embedder
	log *slog.Logger
	// mu guards parts, byID and runCtx: partitions come and go while the
	// worker runs (Add, Remove).
	mu     sync.Mutex
	parts  []*partition
	byID   map[int]*partition
	runCtx context.Context // set while Run runs
	ready  atomic.Bool
	// metrics and trace observe ingestion (metrics.go, trace.go).
	metrics Metrics
	trace   tracing
	// inlineOffUntil is when inline embedding may be tried again (unix ns).
	inlineOffUntil atomic.Int64
	// slots bound the partitions committing at once
	// (Config.CommitConcurrency, commitslots.go).
	slots *commitSlots
	// inflight bounds the payload all partitions' batches hold
	// (Config.InflightBytes, inflight.go).
	inflight inflight
}

type partition struct {
	id      int
	shard   Shard
	cons    atomic.Pointer[jetstream.Consumer]
	applied atomic.Uint64
	lastErr atomic.Pointer[string]
	// bound is set while the partition's consume loop holds a pull
	// subscription on its consumer; rebuildTarget is the stream sequence a
	// partition that started from an empty shard must reach (status.go).
	bound         atomic.Bool
	rebuildTarget atomic.Uint64
	// gap, when set, says events are missing from the stream (gap.go).
	gap atomic.Pointer[string]
	// gapChecked is when process last asked the stream for a gap (unix ns).
	gapChecked atomic.Int64
	// applyFailing is set while the batch in hand fails to commit and is
	// retried (a full disk, a damaged file): the partition is not ready.
	applyFailing atomic.Bool
	// commitWaiting is set while its next batch waits for a commit slot;
	// commits counts the batches committed since the worker took it.
	commitWaiting atomic.Bool
	commits       atomic.Uint64
	// inflightWaiting is set while its next batch waits for the bytes of
	// its first event under the worker's in-flight bound (inflight.go).
	inflightWaiting atomic.Bool
	// recordsMerged counts record upserts that updated a near-duplicate.
	recordsMerged atomic.Uint64
	kick          chan struct{}
	// fenceUntil, when not 0, is the time (unix ns) after which the
	// partition must not commit: the end of its lease by this worker's
	// clock (see SetFence).
	fenceUntil atomic.Int64
	// cancel stops the partition's loops; done is closed when they return.
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a worker for the partitions of cfg; shards must hold an open
// shard for each of them.
func New(js jetstream.JetStream, cfg Config, shards map[int]Shard, emb embedder.Embedder) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Worker{js: js, cfg: cfg, emb: emb, log: cfg.Logger, byID: make(map[int]*partition),
		metrics: cfg.Metrics, trace: newTracing(cfg.TracerProvider), slots: newCommitSlots(cfg.CommitConcurrency, cfg.BatchSize),
		inflight: newInflight(cfg.InflightBytes)}
	for _, id := range cfg.Partitions {
		if _, dup := w.byID[id]; dup {
			return nil, fmt.Errorf("new worker: partition %d listed twice", id)
		}
		sh, ok := shards[id]
		if !ok {
			return nil, fmt.Errorf("new worker: no shard for partition %d", id)
		}
		p := &partition{id: id, shard: sh, kick: make(chan struct{}, 1)}
		w.parts = append(w.parts, p)
		w.byID[id] = p
	}
	return w, nil
}

// Start positions each partition's durable consumer right after the
// sequence its shard applied last. It must succeed before Run.
func (w *Worker) Start(ctx context.Context) error {
	for _, p := range w.snapshot() {
		if err := w.startPartition(ctx, p); err != nil {
			return fmt.Errorf("start partition %d: %w", p.id, err)
		}
	}
	return nil
}

// startPartition positions p's consumer after its shard's applied sequence.
func (w *Worker) startPartition(ctx context.Context, p *partition) error {
	applied, err := p.shard.AppliedSeq(ctx)
	if err != nil {
		return err
	}
	p.applied.Store(applied)
	cons, err := w.positionConsumer(ctx, p.id, applied)
	if err != nil {
		return err
	}
	p.cons.Store(&cons)
	if err := w.checkGap(ctx, p, applied, 0); err != nil {
		return err
	}
	return w.markRebuild(ctx, p)
}

// positionConsumer (re)creates partition p's durable consumer so that it
// delivers from applied+1: the shard, not the consumer, knows what is done.
// So the consumer's state (what it delivered, what was acknowledged) is
// never read back, and the server keeps it in memory (MemoryStorage): in
// files, the server wrote each consumer's state to a new file up to ten
// times a second while it was busy (a file created, written and renamed;
// 160 a second with 16 partitions, 2 % of the spread ingest's CPU with
// the embedded server, and disk I/O beside the shards' commits). A
// restarted server, or a cluster that lost every replica of it, then has
// no consumer; the pull heartbeat (pullBuffer) notices, and consume
// re-positions it here.
func (w *Worker) positionConsumer(ctx context.Context, p int, applied uint64) (jetstream.Consumer, error) {
	name := ConsumerName(w.cfg.ConsumerPrefix, p)
	if err := w.js.DeleteConsumer(ctx, memindex.StreamEvents, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("reset consumer %s: %w", name, err)
	}
	cc := jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "memindex partition " + strconv.Itoa(p),
		FilterSubject: memindex.PartitionFilter(p),
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       w.cfg.AckWait,
		MaxDeliver:    -1,
		MemoryStorage: true,
		// Two batches may be outstanding (one committing, one fetched)
		// beside the pull buffer.
		MaxAckPending: 2*w.cfg.MaxBatch + 2*w.cfg.BatchSize,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		// A pull consumer in use always has a request waiting; one that
		// has none for this long belongs to nobody any more.
		InactiveThreshold: w.cfg.InactiveThreshold,
	}
	if applied > 0 {
		cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cc.OptStartSeq = applied + 1
	}
	cons, err := createConsumer(ctx, w.js, cc)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", name, err)
	}
	return cons, nil
}

// errCodeInsufficientResources is JetStream's "insufficient resources"
// (nats-server JSInsufficientResourcesErr); nats.go names no constant for it.
const errCodeInsufficientResources jetstream.ErrorCode = 10023

// consumerRetryFor bounds how long createConsumer retries a transient refusal.
const consumerRetryFor = 30 * time.Second

// createConsumer creates the durable consumer cc, retrying while JetStream
// answers "insufficient resources" (10023): a clustered stream just created
// or scaled up refuses consumers until its new peers have joined it, and a
// worker starting then should wait, not fail. The loop is kept rather than
// cenkalti/backoff/v5's Retry, which on ctx's end returns only
// context.Cause and drops JetStream's refusal that this returns.
func createConsumer(ctx context.Context, js jetstream.JetStream, cc jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	deadline := time.Now().Add(consumerRetryFor)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		cons, err := js.CreateConsumer(ctx, memindex.StreamEvents, cc)
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeInsufficientResources || time.Now().After(deadline) {
			return cons, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// Run consumes every held partition, and those added while it runs, until
// ctx ends; then it stops intake, finishes and commits each batch in hand,
// acknowledges it and returns.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	w.runCtx = ctx
	for _, p := range w.parts {
		w.launch(ctx, p)
	}
	w.mu.Unlock()
	w.ready.Store(true)
	<-ctx.Done()
	w.mu.Lock()
	w.runCtx = nil
	parts := slices.Clone(w.parts)
	w.mu.Unlock()
	for _, p := range parts {
		<-p.done
	}
	w.ready.Store(false)
	return nil
}

// launch starts p's consume and backfill loops under ctx; w.mu is held.
// The loops' owner is Run (which waits for done) or Remove.
func (w *Worker) launch(ctx context.Context, p *partition) {
	pctx, cancel := context.WithCancel(ctx)
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		var wg conc.WaitGroup
		wg.Go(func() { w.consume(pctx, p) })
		wg.Go(func() { w.backfill(pctx, p) })
		wg.Wait()
	}()
}

// snapshot returns the partitions held now.
func (w *Worker) snapshot() []*partition {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.parts)
}

// Add starts holding partition id with shard sh: its durable consumer is
// positioned after the shard's applied sequence and, when Run is running,
// its loops start at once (otherwise Run starts them). fence, when not zero,
// is the partition's first fence (see SetFence). The caller keeps owning sh;
// Remove gives it back.
func (w *Worker) Add(ctx context.Context, id int, sh Shard, fence time.Time) error {
	w.mu.Lock()
	_, held := w.byID[id]
	w.mu.Unlock()
	if held {
		return fmt.Errorf("add partition %d: %w", id, ErrHeld)
	}
	p := &partition{id: id, shard: sh, kick: make(chan struct{}, 1)}
	if !fence.IsZero() {
		p.fenceUntil.Store(fence.UnixNano())
	}
	if err := w.startPartition(ctx, p); err != nil {
		return fmt.Errorf("add partition %d: %w", id, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, held := w.byID[id]; held {
		return fmt.Errorf("add partition %d: %w", id, ErrHeld)
	}
	w.parts = append(w.parts, p)
	w.byID[id] = p
	if w.runCtx != nil {
		w.launch(w.runCtx, p)
	}
	return nil
}

// Remove stops holding partition id: intake stops, the batch in hand
// commits (unless fenced) and is acknowledged, the loops return, and with
// deleteConsumer the partition's durable consumer is deleted (a hand-over:
// this worker will not resume it). It returns the partition's shard for the
// caller to close, or ErrNotHeld.
func (w *Worker) Remove(ctx context.Context, id int, deleteConsumer bool) (Shard, error) {
	w.mu.Lock()
	p, ok := w.byID[id]
	if ok {
		delete(w.byID, id)
		w.parts = slices.DeleteFunc(w.parts, func(q *partition) bool { return q == p })
	}
	w.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("remove partition %d: %w", id, ErrNotHeld)
	}
	if p.cancel != nil {
		p.cancel()
		select {
		case <-p.done:
		case <-ctx.Done():
			return p.shard, fmt.Errorf("remove partition %d: batch in hand still running: %w", id, ctx.Err())
		}
	}
	if deleteConsumer {
		err := w.js.DeleteConsumer(ctx, memindex.StreamEvents, ConsumerName(w.cfg.ConsumerPrefix, id))
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return p.shard, fmt.Errorf("remove partition %d: delete consumer: %w", id, err)
		}
	}
	return p.shard, nil
}

// Held returns the partitions the worker holds now, in the order added.
func (w *Worker) Held() []int {
	parts := w.snapshot()
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i] = p.id
	}
	return out
}

// SetFence sets the time after which partition id must not commit (zero:
// no fence): a worker of a dynamic group sets it to the end of its lease by
// its own clock at every renewal, so a worker that loses its lease, or can no
// longer renew it, stops writing before any other may claim it. A batch
// that meets the fence is not committed nor acknowledged; it is redelivered
// to whoever holds the partition next.
func (w *Worker) SetFence(id int, until time.Time) {
	w.mu.Lock()
	p, ok := w.byID[id]
	w.mu.Unlock()
	if !ok {
		return
	}
	if until.IsZero() {
		p.fenceUntil.Store(0)
		return
	}
	p.fenceUntil.Store(until.UnixNano())
}

// fenced reports whether p may not commit now, and the deadline in force.
func (p *partition) fenced() (time.Time, bool) {
	f := p.fenceUntil.Load()
	if f == 0 {
		return time.Time{}, false
	}
	until := time.Unix(0, f)
	return until, !time.Now().Before(until)
}

// Ready reports whether the worker is consuming.
func (w *Worker) Ready() bool { return w.ready.Load() }

// PullBufferBytes is the most a partition's pull buffer holds
// (Config.PullBufferBytes as validated).
func (w *Worker) PullBufferBytes() int { return w.cfg.PullBufferBytes }

// InflightBytes is the most event payload the batches of all the worker's
// partitions hold together (Config.InflightBytes; 0: no bound).
func (w *Worker) InflightBytes() int64 { return w.cfg.InflightBytes }

func (w *Worker) consume(ctx context.Context, p *partition) {
	for ctx.Err() == nil {
		err := w.consumeOnce(ctx, p)
		if err == nil || ctx.Err() != nil {
			return
		}
		p.setErr(err)
		wait := time.Second
		if errors.Is(err, ErrDeliveryGap) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			// Expected when a consumer's leader moves (a gap), or after a
			// server restart, which lost the consumer whose state was in
			// its memory (positionConsumer): re-position at once; if the
			// server is not back yet, that fails and waits.
			w.log.Warn("consume", attrPartition, p.id, attrErr, err)
			wait = 0
		} else {
			w.log.Error("consume", attrPartition, p.id, attrErr, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		// Re-position after an error: the shard knows what is applied.
		cons, perr := w.positionConsumer(ctx, p.id, p.applied.Load())
		if perr == nil {
			p.cons.Store(&cons)
			_ = w.checkGap(ctx, p, p.applied.Load(), 0) // a stream deleted and recreated meanwhile
			continue
		}
		select { // not re-positioned: the old consumer would jump again at once
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// inSequence checks that m is the delivery after *delivered and records
// it. A consumer numbers its deliveries, redeliveries included, so a jump
// means deliveries sent to this worker never arrived: the consumer's
// leader moved, or the connection was cut, while they were on the way.
// The consumer then goes on with later events and would redeliver the
// lost ones only after AckWait, by when acknowledging a later event would
// have acknowledged them too (AckAll), unapplied. The batch in hand is
// dropped instead, and consume re-positions the consumer from the shard.
// It returns m's metadata.
func inSequence(p int, m jetstream.Msg, delivered *uint64) (*jetstream.MsgMetadata, error) {
	md, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("message metadata: %w", err)
	}
	if got := md.Sequence.Consumer; got != *delivered+1 {
		return nil, fmt.Errorf("partition %d: delivery %d (stream sequence %d) arrived after delivery %d; re-positioning from the shard: %w",
			p, got, md.Sequence.Stream, *delivered, ErrDeliveryGap)
	}
	*delivered++
	return md, nil
}

// shutdownGrace is how long the batch in hand may take to commit once the
// worker is told to stop.
const shutdownGrace = 15 * time.Second

// graceContext returns a context that is not cancelled with parent but
// grace after it.
func graceContext(parent context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(ctx, func() { t.Stop() })
	})
	return ctx, func() { stop(); cancel() }
}

// deadLetter is one event that can never apply.
type deadLetter struct {
	msg    jetstream.Msg
	seq    uint64
	reason string
	// ctx is the batch's context, carrying the message's span when traced,
	// so the dead letter's log record has the message's trace id.
	ctx context.Context
}

// process finishes one batch the fetch stage prepared (fetch.go): events
// already applied were skipped and dead letters set aside there; here the
// dead letters go to the DLQ, the rest is applied in one transaction that
// records the batch's last sequence (with the plan prepared, or planned now),
// and then the batch is acknowledged. It retries the commit until it
// succeeds or ctx ends, planning it again from the shard; it never skips
// ahead of a batch that did not commit.
func (w *Worker) process(ctx context.Context, p *partition, pb *prepared) (err error) {
	start := time.Now()
	msgs, bt := pb.f.msgs, pb.bt
	ctx = bt.within(ctx)
	defer func() {
		bt.end(err)
		if err == nil {
			pb.stats.Duration = pb.took + time.Since(start)
			w.metrics.BatchDone(p.id, pb.stats)
		}
	}()
	if pb.fresh == 0 {
		return msgs[len(msgs)-1].Ack()
	}
	dead, last := pb.dead, pb.last
	if err := w.checkGap(ctx, p, pb.applied, firstFresh(pb.f.seqs, pb.applied)); err != nil {
		return err
	}
	stop := heartbeat(ctx, msgs, w.cfg.AckWait/3)
	defer stop()
	// Dead letters are stored before the commit that moves past them, so a
	// crash in between re-sends them (de-duplicated by message id).
	for _, d := range dead {
		if err := w.publishDead(bt.withSpanOf(ctx, d.ctx), p.id, d); err != nil {
			return fmt.Errorf("dead-letter seq %d: %w", d.seq, err)
		}
	}
	for attempt := 0; ; attempt++ {
		var err error
		if attempt == 0 && pb.batch != nil {
			err = w.applyPlan(ctx, p, *pb.batch, pb.chunks, pb.f.size, bt)
		} else {
			err = w.commit(ctx, p, pb.pl, last, pb.f.size, bt)
		}
		if err == nil {
			break
		}
		if errors.Is(err, ErrFenced) {
			p.setErr(err)
			return err // not acknowledged: the next holder gets the batch
		}
		p.setErr(err)
		p.applyFailing.Store(true)
		w.metrics.ShardError(p.id, err)
		w.log.ErrorContext(ctx, "apply batch", attrPartition, p.id, attrSeq, last, attrErr, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff(attempt)):
		}
	}
	p.applied.Store(last)
	p.lastErr.Store(nil)
	p.applyFailing.Store(false)
	if failpoint.Enabled { // tests only: build tag failpoints
		failpoint.Inject(failpoint.AfterCommit)
	}
	return ackBatch(msgs, pb.f.seqs, dead)
}

// ackBatch terminates the dead letters, then acknowledges the highest other
// message (seqs are the stream sequences of msgs), which under AckAll covers
// every message before it.
func ackBatch(msgs []jetstream.Msg, seqs []uint64, dead []deadLetter) error {
	isDead := make(map[jetstream.Msg]bool, len(dead))
	for _, d := range dead {
		isDead[d.msg] = true
		_ = d.msg.TermWithReason(truncateReason(d.reason))
	}
	var top jetstream.Msg
	var topSeq uint64
	for i, m := range msgs {
		if isDead[m] {
			continue
		}
		if seqs[i] >= topSeq {
			top, topSeq = m, seqs[i]
		}
	}
	if top == nil {
		return nil
	}
	return top.Ack()
}

// commit plans, embeds and applies a batch of size messages from the shard
// as it is; bt traces it (nil: off).
func (w *Worker) commit(ctx context.Context, p *partition, pl *planner, last uint64, size int, bt *batchTrace) error {
	b, fresh, _, err := w.plan(ctx, p, pl, last, nil, bt)
	if err != nil {
		return err
	}
	return w.applyPlan(ctx, p, b, fresh, size, bt)
}

// plan builds the batch of pl after the batch whose plan left prev (see
// planner.buildAfter) and embeds its new chunks inline, unless inline
// embedding is paused.
func (w *Worker) plan(ctx context.Context, p *partition, pl *planner, last uint64, prev *afterBatch, bt *batchTrace) (store.Batch, []*store.Chunk, *afterBatch, error) {
	span := bt.start(SpanChunk)
	b, fresh, after, err := pl.buildAfter(ctx, p.shard, w.cfg.Chunker, w.cfg.Markdown, last, prev)
	if err == nil {
		span.SetAttributes(attrKeyChunks.Int(len(fresh)))
	}
	endSpan(span, err)
	if err != nil {
		return b, nil, nil, err
	}
	if len(fresh) > 0 && time.Now().UnixNano() >= w.inlineOffUntil.Load() {
		w.embedInline(ctx, fresh, bt)
	}
	return b, fresh, after, nil
}

// applyPlan commits the planned batch b, whose new chunks are fresh, of
// size messages counted as BatchSize counts them.
func (w *Worker) applyPlan(ctx context.Context, p *partition, b store.Batch, fresh []*store.Chunk, size int, bt *batchTrace) error {
	if failpoint.Enabled { // tests only: build tag failpoints
		failpoint.Inject(failpoint.AfterEmbed)
	}
	// A fenced partition commits nothing; the transaction must also end
	// before the fence, so it runs under the fence as a deadline.
	if until, fenced := p.fenced(); fenced {
		return fmt.Errorf("partition %d: lease ended at %s: %w", p.id, until.Format(time.RFC3339Nano), ErrFenced)
	} else if !until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	span := bt.start(SpanCommit)
	merged, err := mergeNearDuplicates(ctx, p.shard, b.Records)
	var free func()
	if err == nil {
		free, err = w.slots.take(ctx, size, &p.commitWaiting)
	}
	if err == nil {
		b.Committed = free
		_, err = p.shard.Apply(ctx, b)
		free()
		if err == nil {
			p.commits.Add(1)
		}
	}
	endSpan(span, err)
	if err != nil {
		return err
	}
	p.recordsMerged.Add(uint64(merged))
	for _, c := range fresh {
		if c.Vector == nil {
			p.kickBackfill()
			break
		}
	}
	return nil
}

// embedInline gives the batch's new chunks their vectors when the embedder
// answers within EmbedTimeout; otherwise they commit without and wait for
// the backfill. Ingestion never waits longer on the provider.
func (w *Worker) embedInline(ctx context.Context, fresh []*store.Chunk, bt *batchTrace) {
	span := bt.startEmbed(len(fresh))
	texts := make([]string, len(fresh))
	for i, c := range fresh {
		texts[i] = chunker.EmbedText(c.Context, c.Text)
	}
	ectx, cancel := context.WithTimeout(ctx, w.cfg.EmbedTimeout)
	defer cancel()
	vecs, err := w.emb.Embed(ectx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
	if err == nil {
		err = embedder.CheckVectors(vecs, len(texts), w.emb.Info().Dims)
	}
	endSpan(span, err)
	if err != nil && ctx.Err() != nil {
		return // the batch is given up (shutdown, or the batch ahead failed), not the provider
	}
	if err != nil {
		w.inlineOffUntil.Store(time.Now().Add(w.cfg.InlineCooloff).UnixNano())
		w.log.WarnContext(ctx, "embed batch; chunks wait for the backfill, inline embedding paused", attrCount, len(texts), attrErr, err, "pause", w.cfg.InlineCooloff)
		return
	}
	for i, c := range fresh {
		c.Vector = vecs[i]
	}
}

func (p *partition) kickBackfill() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *partition) setErr(err error) {
	s := err.Error()
	p.lastErr.Store(&s)
}

// heartbeat sends InProgress for msgs every interval until stop is called,
// so a slow commit does not trigger redelivery.
func heartbeat(ctx context.Context, msgs []jetstream.Msg, every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg conc.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// backoff is the pause before commit attempt attempt+1: 100 ms doubling to
// 5 s. The commit loop is hand-written, not cenkalti/backoff/v5's Retry: it
// must never give up (Retry stops after 15 minutes unless told otherwise,
// and a skipped batch would break exactly-once), its first attempt differs
// from the others, and each failure is logged and marks the partition.
func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 6)
	return min(d, 5*time.Second)
}

func truncateReason(s string) string {
	if len(s) > 512 {
		return s[:512]
	}
	return s
}

// DeleteConsumers removes the durable consumers of this worker's partitions,
// for a worker that will not run again (its shards were replaced).
func (w *Worker) DeleteConsumers(ctx context.Context) error {
	var errs []error
	for _, p := range w.snapshot() {
		err := w.js.DeleteConsumer(ctx, memindex.StreamEvents, ConsumerName(w.cfg.ConsumerPrefix, p.id))
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
