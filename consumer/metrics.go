package consumer

import "time"

// Outcomes of an ingested message, as counted in BatchStats.
const (
	// OutcomeIndexed is an event applied to its shard.
	OutcomeIndexed = "indexed"
	// OutcomeDLQ is an event that can never apply: dead-lettered, terminated.
	OutcomeDLQ = "dlq"
	// OutcomeDuplicate is a redelivery of an event the shard already held.
	OutcomeDuplicate = "duplicate"
)

// Metrics receives the measurements of ingestion. Worker calls it from the
// goroutine of each partition, so an implementation must be safe for
// concurrent use, and quick: it runs on the ingest path. Config.Metrics nil
// means none are taken. Partition numbers are the only labels it is given;
// namespaces never.
type Metrics interface {
	// BatchDone reports a batch of partition that was committed and
	// acknowledged (or only acknowledged, when every event was a duplicate).
	BatchDone(partition int, s BatchStats)
	// ShardError reports a failed read or write of partition's shard during
	// ingestion (a commit, which is retried, or a backfill's vectors).
	ShardError(partition int, err error)
}

// BatchStats describes one batch: how many of its events had each outcome,
// how many session messages the indexed ones applied (one a message event,
// each of a messages event's), and how long it took from the fetch of its
// events to their ack.
type BatchStats struct {
	Indexed, DLQ, Duplicate int
	Messages                int
	Duration                time.Duration
}

// MetricsFuncs adapts functions to Metrics; a nil field is a no-op.
type MetricsFuncs struct {
	BatchDoneFunc  func(partition int, s BatchStats)
	ShardErrorFunc func(partition int, err error)
}

// BatchDone calls BatchDoneFunc.
func (f MetricsFuncs) BatchDone(partition int, s BatchStats) {
	if f.BatchDoneFunc != nil {
		f.BatchDoneFunc(partition, s)
	}
}

// ShardError calls ShardErrorFunc.
func (f MetricsFuncs) ShardError(partition int, err error) {
	if f.ShardErrorFunc != nil {
		f.ShardErrorFunc(partition, err)
	}
}
