package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// Status reports every owned partition: applied sequence, consumer backlog,
// shard counts and dead letters. A part that cannot be read is reported in
// the partition's Error, never hidden.
func (w *Worker) Status(ctx context.Context) []memindex.PartitionStatus {
	dlq, dlqErr := DLQCounts(ctx, w.js)
	parts := w.snapshot()
	out := make([]memindex.PartitionStatus, 0, len(parts))
	for _, p := range parts {
		ps := memindex.PartitionStatus{Partition: p.id, AppliedSeq: p.applied.Load(), DLQ: dlq[p.id], RecordsMerged: p.recordsMerged.Load(),
			CommitWaiting: p.commitWaiting.Load(), InflightWaiting: p.inflightWaiting.Load(), Commits: p.commits.Load()}
		if e := p.lastErr.Load(); e != nil {
			ps.Error = *e
		}
		if g := p.gap.Load(); g != nil {
			ps.Error = *g // events are missing: the worst news first
		}
		if c := p.cons.Load(); c != nil {
			if info, err := (*c).Info(ctx); err == nil {
				ps.Pending = info.NumPending
				ps.AckPending = info.NumAckPending
			} else if ps.Error == "" {
				ps.Error = "consumer info: " + err.Error()
			}
		}
		ps.Checkpoints, ps.CheckpointError = p.shard.Checkpoints()
		if st, err := p.shard.Stats(ctx); err == nil {
			ps.Messages, ps.Chunks, ps.Sessions = st.Messages, st.Chunks, st.Sessions
			ps.VectorsWaiting, ps.Namespaces = st.VectorsWaiting, st.Namespaces
			ps.KeywordIndex, ps.KeywordIndexBytes, ps.VectorIndexBytes = st.KeywordIndex, st.KeywordIndexBytes, st.VectorIndexBytes
			if !st.OldestWaiting.IsZero() {
				ps.OldestWaitSeconds = time.Since(st.OldestWaiting).Seconds()
			}
		} else if ps.Error == "" {
			ps.Error = "shard stats: " + err.Error()
		}
		if dlqErr != nil && ps.Error == "" {
			ps.Error = dlqErr.Error()
		}
		if pb, ok := p.shard.(interface{ PageBytes() int }); ok {
			ps.PageBytes = pb.PageBytes() // *store.Shard
		}
		if vm, ok := p.shard.(interface{ VectorMode() (string, string) }); ok {
			ps.VectorMode, ps.VectorModeReason = vm.VectorMode() // *store.Shard: sqlite-vec or go-scan
		}
		out = append(out, ps)
	}
	return out
}

// Applied returns the last applied stream sequence of partition p, and
// whether this worker owns p.
func (w *Worker) Applied(p int) (uint64, bool) {
	w.mu.Lock()
	part, ok := w.byID[p]
	w.mu.Unlock()
	if !ok {
		return 0, false
	}
	return part.applied.Load(), true
}

// PartitionReadiness is what a readiness probe needs to know of one
// partition; see Worker.Readiness.
type PartitionReadiness struct {
	Partition int
	// Bound says the partition's consume loop holds a pull subscription on
	// its durable consumer (false before Run, after it, and while the loop
	// waits to retry after an error).
	Bound bool
	// Pending is how many events of the partition the consumer has not
	// delivered yet: the lag. It is 0 when Err is set.
	Pending uint64
	// Applied is the last stream sequence the shard holds.
	Applied uint64
	// RebuildTarget is, for a partition that started from an empty shard
	// while the stream held events for it (a new, deleted or rebuilt shard),
	// the stream sequence of the last of those events; 0 otherwise.
	RebuildTarget uint64
	// Err says why Pending could not be read.
	Err error
	// ApplyErr, when not empty, is why the batch in hand fails to commit:
	// it is retried in place and not acknowledged until it commits.
	ApplyErr string
	// Gap, when not empty, says events this partition had not applied are
	// missing from the stream (gap.go); it stays until the worker restarts.
	Gap string
}

// Rebuilding reports whether the partition is still filling an empty shard
// from the stream: it has not yet applied every event the stream held for it
// when the worker started, so its searches would miss older data.
func (r PartitionReadiness) Rebuilding() bool { return r.Applied < r.RebuildTarget }

// Rebuilding reports whether held partition p is filling an empty shard
// from the stream (see PartitionReadiness.Rebuilding), without asking the
// server anything.
func (w *Worker) Rebuilding(p int) bool {
	w.mu.Lock()
	part, ok := w.byID[p]
	w.mu.Unlock()
	return ok && part.applied.Load() < part.rebuildTarget.Load()
}

// Readiness reports, for every owned partition, whether it is bound, its lag
// and whether it is rebuilding. It asks the server for each consumer's
// pending count and reads nothing from the shards, so a probe stays cheap.
func (w *Worker) Readiness(ctx context.Context) []PartitionReadiness {
	return w.ReadinessOf(ctx, nil)
}

// ReadinessOf is Readiness of the owned partitions for which want is true
// (every one when want is nil): one consumer-info request each.
func (w *Worker) ReadinessOf(ctx context.Context, want func(p int) bool) []PartitionReadiness {
	parts := w.snapshot()
	out := make([]PartitionReadiness, 0, len(parts))
	for _, p := range parts {
		if want != nil && !want(p.id) {
			continue
		}
		r := PartitionReadiness{Partition: p.id, Bound: p.bound.Load(), Applied: p.applied.Load(), RebuildTarget: p.rebuildTarget.Load()}
		if e := p.lastErr.Load(); e != nil && p.applyFailing.Load() {
			r.ApplyErr = *e
		}
		if g := p.gap.Load(); g != nil {
			r.Gap = *g
		}
		if c := p.cons.Load(); c == nil {
			r.Err = errors.New("no consumer")
		} else if info, err := (*c).Info(ctx); err != nil {
			r.Err = fmt.Errorf("consumer info: %w", err)
		} else {
			r.Pending = info.NumPending
		}
		out = append(out, r)
	}
	return out
}

// markRebuild records the rebuild target of partition p when its shard is
// empty and the stream holds events for it (see PartitionReadiness).
func (w *Worker) markRebuild(ctx context.Context, p *partition) error {
	if p.applied.Load() > 0 {
		return nil
	}
	s, err := w.js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		return fmt.Errorf("rebuild target: %w", err)
	}
	m, err := s.GetLastMsgForSubject(ctx, memindex.PartitionFilter(p.id))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("rebuild target: %w", err)
	}
	p.rebuildTarget.Store(m.Sequence)
	return nil
}
