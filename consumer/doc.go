// Package consumer owns ingestion: the JetStream streams and the durable pull
// consumer of each partition, decoding and validating events, coalescing a
// batch per session, planning the re-chunking of each touched session,
// embedding new chunks, applying the batch to the partition's shard in one
// transaction, the ack policy, the dead-letter stream and the vector backfill.
//
// The fate of every message is decided in one place (Worker.process): applied
// → acknowledged after the commit; never applicable → copied to MEMINDEX_DLQ
// with its reason, then terminated. A shard records the last stream sequence it
// applied in the same transaction as the data, and a partition's consumer is
// (re)created at start to deliver from the sequence after it, so redeliveries
// and replays are no-ops and a deleted shard is rebuilt from the stream.
//
// Ingestion is observable without depending on a metrics or tracing backend:
// Config.Metrics (metrics.go) is told each batch's events by outcome
// (indexed, dlq, duplicate) and duration, and each failed shard operation;
// Config.TracerProvider (trace.go) traces each message as a child of the
// publisher's span (W3C traceparent in NATS headers, found whatever its case)
// and each batch's chunk, embed and commit steps. Both are off when nil, at
// no cost. Worker.Readiness (status.go) says, per partition, whether its
// consumer is bound, how far it lags and whether it is still rebuilding an
// empty shard from the stream.
//
// It must not serve queries, know the SQLite schema (it talks to a Shard
// interface) or read configuration from the environment.
package consumer
