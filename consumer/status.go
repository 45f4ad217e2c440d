package consumer

import (
	"context"
	"time"

	"memindex"
)

// Status reports every owned partition: applied sequence, consumer backlog,
// shard counts and dead letters. A part that cannot be read is reported in
// the partition's Error, never hidden.
func (w *Worker) Status(ctx context.Context) []memindex.PartitionStatus {
	dlq, dlqErr := DLQCounts(ctx, w.js)
	out := make([]memindex.PartitionStatus, 0, len(w.parts))
	for _, p := range w.parts {
		ps := memindex.PartitionStatus{Partition: p.id, AppliedSeq: p.applied.Load(), DLQ: dlq[p.id], RecordsMerged: p.recordsMerged.Load()}
		if e := p.lastErr.Load(); e != nil {
			ps.Error = *e
		}
		if c := p.cons.Load(); c != nil {
			if info, err := (*c).Info(ctx); err == nil {
				ps.Pending = info.NumPending
				ps.AckPending = info.NumAckPending
			} else if ps.Error == "" {
				ps.Error = "consumer info: " + err.Error()
			}
		}
		if st, err := p.shard.Stats(ctx); err == nil {
			ps.Messages, ps.Chunks, ps.Sessions = st.Messages, st.Chunks, st.Sessions
			ps.VectorsWaiting, ps.Namespaces = st.VectorsWaiting, st.Namespaces
			if !st.OldestWaiting.IsZero() {
				ps.OldestWaitSeconds = time.Since(st.OldestWaiting).Seconds()
			}
		} else if ps.Error == "" {
			ps.Error = "shard stats: " + err.Error()
		}
		if dlqErr != nil && ps.Error == "" {
			ps.Error = dlqErr.Error()
		}
		out = append(out, ps)
	}
	return out
}

// Applied returns the last applied stream sequence of partition p, and
// whether this worker owns p.
func (w *Worker) Applied(p int) (uint64, bool) {
	part, ok := w.byID[p]
	if !ok {
		return 0, false
	}
	return part.applied.Load(), true
}
