package consumer

import (
	"context"
	"fmt"
	"time"

	"memindex"
)

// A partition applies the event stream in order and records the last
// sequence it applied. Two faults would make it skip events without
// noticing: events removed from the stream before it saw them (the
// stream's limits aged them out, or someone purged it) — its durable
// consumer then simply delivers the next one still there — and a stream
// deleted and recreated, whose new sequences start again below the
// applied one. checkGap detects both, from the stream's first and last
// sequences, and reports them: an error log record, and the partition's
// gap, which Status shows as its Error and Readiness as Gap (so /readyz
// says not ready) until the worker restarts. Events cannot be brought
// back: the operator rebuilds the shard (memindex rebuild) from what the
// stream still holds, or restores them.

// checkGap checks, for partition p that applied through applied and whose
// next event to apply has sequence next (0: at start or after a
// re-position, not known), that no event after applied is missing from
// the stream. A gap is recorded on p and logged; an error reading the
// stream is returned. It asks the server only when next is 0 or
// next > applied+1, so in-order delivery costs nothing.
func (w *Worker) checkGap(ctx context.Context, p *partition, applied, next uint64) error {
	if p.gap.Load() != nil {
		return nil // reported already, until the worker restarts
	}
	if next != 0 {
		// From process: on a partition of an interleaved stream almost every
		// batch starts past applied+1 (the other partitions' events lie in
		// between), so ask the stream at most once per gapCheckEvery, not
		// once per batch.
		now := time.Now().UnixNano()
		if next <= applied+1 || now-p.gapChecked.Load() < int64(gapCheckEvery) {
			return nil
		}
		p.gapChecked.Store(now)
	}
	s, err := w.js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		return fmt.Errorf("check stream gap: %w", err)
	}
	st := s.CachedInfo().State
	gap := streamGap(p.id, applied, st.FirstSeq, st.LastSeq)
	if gap == nil {
		return nil
	}
	msg := gap.Error()
	p.gap.Store(&msg)
	w.log.ErrorContext(ctx, "stream gap: events skipped", attrPartition, p.id, attrSeq, applied, attrErr, gap)
	return nil
}

// gapCheckEvery bounds how often the ingest loop asks the stream for a gap;
// start-up and re-positioning always ask.
const gapCheckEvery = 10 * time.Second

// streamGap returns the gap, if any, between a partition's applied
// sequence and a stream holding first..last (first is last+1 when empty).
func streamGap(partition int, applied, first, last uint64) error {
	switch {
	case applied > last:
		return fmt.Errorf("partition %d applied stream sequence %d but %s ends at %d: the stream was deleted and recreated or reset, and its new events would be skipped; rebuild the shard (memindex rebuild): %w",
			partition, applied, memindex.StreamEvents, last, ErrStreamGap)
	case first > applied+1:
		return fmt.Errorf("partition %d applied stream sequence %d but %s now starts at %d: events %d-%d were removed (limits, age or purge) before it applied them, and any of this partition's among them are missing from its shard; restore them or rebuild the shard: %w",
			partition, applied, memindex.StreamEvents, first, applied+1, first-1, ErrStreamGap)
	}
	return nil
}

// firstFresh returns the first of the stream sequences seqs after applied
// (seqs are in stream order), or 0 when none is.
func firstFresh(seqs []uint64, applied uint64) uint64 {
	for _, s := range seqs {
		if s > applied {
			return s
		}
	}
	return 0
}
