package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/store"
)

// The ingest pipeline of a partition has two stages. The fetch stage
// collects the next batch from the pull subscription, checks its delivery
// sequence and decodes its events, skips what the shard will hold once the
// batches ahead commit, and plans and embeds the rest (prepare); meanwhile
// the commit stage (process) commits and acknowledges the batch before it.
// A batch is planned before the one ahead commits only from what that
// batch's plan leaves (plan_after.go); when that is not enough, its
// planning waits for the commit. The stages meet at an unbuffered channel,
// so at most one batch waits prepared while another commits. The exactly-
// once argument is unchanged: the delivery-gap check (inSequence) runs on
// every delivery, in order; batches commit and are acknowledged one after
// the other in delivery order, each recording its last sequence in its
// transaction; a batch prepared after one that fails to commit is dropped
// unacknowledged, and the consumer is re-positioned from the shard.

// fetched is one batch as the fetch stage hands it to the commit stage: its
// messages in delivery order with their stream sequences and, decoded ahead,
// their events or the reasons they can never apply.
type fetched struct {
	msgs   []jetstream.Msg
	seqs   []uint64
	events []memindex.Event
	errs   []error
	bytes  int
	// size is what the batch counts against its limit: a message per
	// message, a messages event's messages, one for every other event.
	size int
	// decode is the time the fetch stage spent decoding.
	decode time.Duration
	// held is what the batch took of the worker's in-flight bound
	// (inflight.go), given back once it is committed or dropped.
	held int64
}

// newFetched returns a batch with room for n events.
func newFetched(n uint64) *fetched {
	return &fetched{msgs: make([]jetstream.Msg, 0, n), seqs: make([]uint64, 0, n),
		events: make([]memindex.Event, 0, n), errs: make([]error, 0, n)}
}

// add decodes m, with its metadata md, into b.
func (b *fetched) add(l memindex.Limits, m jetstream.Msg, md *jetstream.MsgMetadata) {
	t := time.Now()
	e, err := decodeMsg(l, m.Subject(), m.Data(), md.Timestamp)
	b.decode += time.Since(t)
	b.msgs = append(b.msgs, m)
	b.seqs = append(b.seqs, md.Sequence.Stream)
	b.events = append(b.events, e)
	b.errs = append(b.errs, err)
	b.bytes += len(m.Data())
	b.size += max(1, len(e.Messages))
}

// DefaultPullBufferBytes is Config.PullBufferBytes when none is given: it
// holds the 2,000 buffered events of the default batch size at 4 KiB each,
// so only events larger than most messages meet the byte bound.
const DefaultPullBufferBytes = 8 << 20

// PullMargin is what Config.PullBufferBytes keeps beyond the largest event
// payload for the subject, reply subject and headers NATS counts with it.
const PullMargin = 64 << 10

// PullBufferBound is the pull buffer a partition gets for Config.PullBufferBytes
// bytes (0: DefaultPullBufferBytes) under limits l: never less than the
// largest event l accepts plus PullMargin.
func PullBufferBound(bytes int, l memindex.Limits) int {
	if bytes == 0 {
		bytes = DefaultPullBufferBytes
	}
	return max(bytes, l.WithDefaults().MaxEventBytes+PullMargin)
}

// pullBuffer is the options of a partition's pull subscription: at most
// 2×batch events and bytes bytes buffered. nats.go bounds each pull
// request by bytes (the server ends a request before the event that would
// pass them) but asks again once fewer than a threshold of events are
// buffered, however large they are; with the threshold at one event it
// asks only when the buffer is empty, so the buffer holds at most one
// request's bytes (TestPullBufferIsBoundedInBytes); two just after a
// reconnect or a missed heartbeat, when nats.go forgets what it asked
// for. Without the byte bound, 2,000 events of 1 MiB (memory files, full
// messages events) were 2 GiB a partition, outside --memory-limit.
//
// The server sends an idle heartbeat every pullHeartbeat while a pull
// waits; two missed end the subscription (jetstream.ErrNoHeartbeat) and
// consume re-positions the consumer. That is how a worker notices that a
// restarted server no longer has its consumer (positionConsumer keeps the
// consumer's state in memory): nats.go re-sends its pull after the
// reconnect, and a pull for a consumer that does not exist gets no
// answer. nats.go's default, half the 30-second pull expiry, left a
// partition idle for 30 seconds after a server restart.
func pullBuffer(batch, bytes int) []jetstream.PullMessagesOpt {
	return []jetstream.PullMessagesOpt{
		jetstream.PullMaxMessagesWithBytesLimit(2*batch, bytes),
		jetstream.PullThresholdMessages(1),
		jetstream.PullHeartbeat(pullHeartbeat),
	}
}

// pullHeartbeat is the idle heartbeat of a partition's pull subscription.
const pullHeartbeat = 2 * time.Second

// consumeOnce runs partition p's pipeline on one pull subscription until ctx
// ends (nil) or a stage fails (its error).
func (w *Worker) consumeOnce(ctx context.Context, p *partition) error {
	it, err := (*p.cons.Load()).Messages(pullBuffer(w.cfg.BatchSize, w.cfg.PullBufferBytes)...)
	if err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	defer it.Stop()
	p.bound.Store(true)
	defer p.bound.Store(false)

	batches := make(chan *prepared)
	pp := &pipeline{applied: p.applied.Load(), wake: make(chan struct{}, 1)}
	fctx, stopFetch := context.WithCancel(ctx)
	var fetchErr error
	var wg conc.WaitGroup
	wg.Go(func() {
		defer close(batches)
		fetchErr = w.fetch(fctx, p, it, pp, batches)
	})
	defer func() { stopFetch(); wg.Wait() }()
	for b := range batches {
		// The batch in hand is finished even when ctx ends meanwhile, within
		// a grace period: a commit that keeps failing must not hold shutdown.
		bctx, cancel := graceContext(ctx, shutdownGrace)
		err := w.process(bctx, p, b)
		cancel()
		w.inflight.give(b.f.held)
		if err != nil {
			return err // the batch prepared meanwhile, if any, is dropped unacknowledged
		}
		pp.committed.Add(1)
		select {
		case pp.wake <- struct{}{}:
		default:
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return fetchErr
}

// pipeline is what the two stages of one consumeOnce share.
type pipeline struct {
	// committed counts the batches the commit stage finished; wake is
	// signalled after each.
	committed atomic.Uint64
	wake      chan struct{}
	// The fetch stage's own: the batches it handed over, the applied
	// sequence once they all commit, and what the last one's plan left
	// (nil: the next plan waits for the commits).
	handed  uint64
	applied uint64
	prev    *afterBatch
}

// prepared is a batch the fetch stage hands to the commit stage: its
// messages with what became of each, and its plan with its new chunks
// embedded (batch nil: the commit stage plans it).
type prepared struct {
	f       *fetched
	bt      *batchTrace
	stats   BatchStats
	pl      *planner
	dead    []deadLetter
	last    uint64 // the batch's highest stream sequence
	applied uint64 // the applied sequence the batch was filtered against
	fresh   int    // messages after applied
	batch   *store.Batch
	chunks  []*store.Chunk
	took    time.Duration // spent in the fetch stage
}

// fetch collects batches from it, prepares them and hands them to out in
// delivery order until ctx ends (nil), a delivery is missing (ErrDeliveryGap:
// the batch being collected is dropped) or the subscription fails. A batch
// holds up to BatchSize messages, waiting at most BatchWait for the next
// event (or longer while the stream holds more, see nextWait); while the
// commit stage is busy up to MaxBatch (see batchLimit), and never more than
// MaxBatchBytes of payload. A messages event counts its messages (so a
// batch may pass its limit by one event's).
func (w *Worker) fetch(ctx context.Context, p *partition, it jetstream.MessagesContext, pp *pipeline, out chan<- *prepared) error {
	// Every consumeOnce runs on a consumer positioned just before (Add, or
	// consume after an error), whose deliveries are numbered from 1; see
	// inSequence.
	var delivered uint64
	// carried is a delivery that did not fit the batch before in the
	// in-flight bound; it opens the next one.
	var carried jetstream.Msg
	var carriedMD *jetstream.MsgMetadata
	for {
		first, md := carried, carriedMD
		carried, carriedMD = nil, nil
		if first == nil {
			var err error
			if first, err = it.Next(jetstream.NextContext(ctx)); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("next: %w", err)
			}
			if md, err = inSequence(p.id, first, &delivered); err != nil {
				return err
			}
		}
		held, ok := w.inflight.take(ctx, len(first.Data()), first, w.cfg.AckWait/3, &p.inflightWaiting)
		if !ok {
			return nil
		}
		// Sized for the events waiting, up to the batch's limit: a batch
		// of thousands grown by appends copied its events (about 600
		// bytes each) about twice over.
		b := newFetched(min(uint64(w.batchLimit(pp)), md.NumPending+1))
		b.held = held
		b.add(w.cfg.Limits, first, md)
		// No heartbeat reaches the events of a batch being collected, so
		// it is handed on within a third of AckWait whatever the waits.
		closeBy := time.Now().Add(w.cfg.AckWait / 3)
		for b.size < w.batchLimit(pp) && b.bytes < w.cfg.MaxBatchBytes {
			wait := w.nextWait(md, time.Until(closeBy))
			if wait <= 0 {
				break
			}
			m, err := it.Next(jetstream.NextMaxWait(wait))
			if err != nil {
				break
			}
			if md, err = inSequence(p.id, m, &delivered); err != nil {
				w.inflight.give(b.held)
				return err
			}
			n, ok := w.inflight.tryTake(len(m.Data()))
			if !ok {
				carried, carriedMD = m, md
				break
			}
			b.held += n
			b.add(w.cfg.Limits, m, md)
		}
		pb, ok := w.prepare(ctx, p, pp, b)
		if !ok || !handOver(ctx, pb, out, w.cfg.AckWait/3) {
			w.inflight.give(b.held)
			if pb != nil {
				pb.bt.end(ctx.Err())
			}
			return nil
		}
		pp.handed++
	}
}

// prepare decides the fate of each message of b against the applied
// sequence the shard will hold once every batch handed over commits:
// already applied (skipped), never applicable (a dead letter) or indexed;
// and plans and embeds the indexed ones. It plans before the batches ahead
// commit when what the last one's plan left is enough, and otherwise waits
// for their commits (false: ctx ended meanwhile). A plan that fails is left
// to the commit stage, which plans again and retries.
func (w *Worker) prepare(ctx context.Context, p *partition, pp *pipeline, b *fetched) (*prepared, bool) {
	start := time.Now()
	pb := &prepared{f: b, applied: pp.applied, pl: newPlanner()}
	pb.bt = w.trace.begin(ctx, p.id, ConsumerName(w.cfg.ConsumerPrefix, p.id), len(b.msgs))
	tctx := pb.bt.context(ctx)
	defer func() { pb.took = b.decode + time.Since(start) }()
	for i, m := range b.msgs {
		seq := b.seqs[i]
		pb.last = max(pb.last, seq)
		if seq <= pb.applied {
			pb.stats.Duplicate++
			pb.bt.message(tctx, m, seq, OutcomeDuplicate, "")
			continue // a redelivery of what the shard already holds
		}
		pb.fresh++
		if err := b.errs[i]; err != nil {
			mctx := pb.bt.message(tctx, m, seq, OutcomeDLQ, err.Error())
			pb.dead = append(pb.dead, deadLetter{msg: m, seq: seq, reason: err.Error(), ctx: mctx})
			continue
		}
		pb.bt.message(tctx, m, seq, OutcomeIndexed, "")
		switch e := &b.events[i]; e.Type {
		case memindex.TypeMessage:
			pb.stats.Messages++
		case memindex.TypeMessages:
			pb.stats.Messages += len(e.Messages)
		}
		pb.pl.add(b.events[i])
	}
	pb.stats.DLQ, pb.stats.Indexed = len(pb.dead), pb.fresh-len(pb.dead)
	if pb.fresh == 0 {
		return pb, true
	}
	pp.applied = max(pp.applied, pb.last)
	prev := pp.prev
	pp.prev = nil
	if pp.committed.Load() < pp.handed {
		if prev != nil {
			bt, chunks, after, err := w.plan(tctx, p, pb.pl, pb.last, prev, pb.bt)
			if err == nil {
				pb.batch, pb.chunks, pp.prev = &bt, chunks, after
				return pb, true
			}
			if !errors.Is(err, errNeedsCommit) {
				return pb, true
			}
		}
		if !waitCommitted(ctx, pp, b.msgs, w.cfg.AckWait/3) {
			return pb, false
		}
	}
	bt, chunks, after, err := w.plan(tctx, p, pb.pl, pb.last, nil, pb.bt)
	if err == nil {
		pb.batch, pb.chunks, pp.prev = &bt, chunks, after
	}
	return pb, true
}

// waitCommitted waits until the commit stage has finished every batch
// handed to it, with InProgress heartbeats for msgs every interval. It
// reports false when ctx ended first.
func waitCommitted(ctx context.Context, pp *pipeline, msgs []jetstream.Msg, every time.Duration) bool {
	t := time.NewTicker(every)
	defer t.Stop()
	for pp.committed.Load() < pp.handed {
		select {
		case <-pp.wake:
		case <-ctx.Done():
			return false
		case <-t.C:
			for _, m := range msgs {
				_ = m.InProgress()
			}
		}
	}
	return true
}

// batchLimit is the size of the batch being collected: MaxBatch while the
// commit stage is busy with the batch before, else BatchSize. An idle
// commit stage gets a batch as soon as one is full; a busy one could not
// take it before it ends anyway, so the events that arrive meanwhile join
// the batch and share one commit. It does not ask how many events the
// stream still holds (md.NumPending): that counts events, not messages,
// and not those already in the pull buffer, so a partition fed messages
// events looked caught up while its batches waited for a commit slot
// (BENCHMARKS.md, eighteenth session).
func (w *Worker) batchLimit(pp *pipeline) int {
	if pp.committed.Load() < pp.handed {
		return w.cfg.MaxBatch
	}
	return w.cfg.BatchSize
}

// pendingWait is how long a batch being collected waits for its next event
// while the stream holds more events for the consumer (at least BatchWait).
const pendingWait = 100 * time.Millisecond

// nextWait is how long the batch being collected waits for its next event
// after a delivery with metadata md: BatchWait, which ends a batch when a
// burst of events ends; or, while the stream holds more events for this
// consumer (md.NumPending > 0), pendingWait. A pause then is the pull
// buffer waiting for its refill on a busy box, not the end of a burst: a
// batch cut there commits whatever the buffer held, and a partition that
// is behind over many interleaved sessions pays the writer's cost of each
// session it touches once a batch (the hot suite's one namespace committed
// 2,000-message batches instead of the 4,000 it could have, BENCHMARKS.md).
// Neither is longer than left, the time the batch may still be collected
// (none when left is not positive).
func (w *Worker) nextWait(md *jetstream.MsgMetadata, left time.Duration) time.Duration {
	wait := w.cfg.BatchWait
	if md.NumPending > 0 {
		wait = max(wait, pendingWait)
	}
	return min(wait, left)
}

// handOver sends b to out, with InProgress heartbeats for its messages every
// interval while the commit stage is busy, so that waiting does not trigger
// redelivery. It reports false when ctx ended first.
func handOver(ctx context.Context, pb *prepared, out chan<- *prepared, every time.Duration) bool {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case out <- pb:
			return true
		case <-ctx.Done():
			return false
		case <-t.C:
			for _, m := range pb.f.msgs {
				_ = m.InProgress()
			}
		}
	}
}
