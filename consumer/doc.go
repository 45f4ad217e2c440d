// Package consumer owns ingestion: the JetStream streams and the durable pull
// consumer of each partition, decoding and validating events (within
// Config.Limits: an event over a size or session-length cap is
// dead-lettered, never truncated), coalescing a
// batch per session, planning the re-chunking of each touched session,
// embedding new chunks, applying the batch to the partition's shard in one
// transaction, the ack policy, the dead-letter stream and the vector backfill.
//
// The fate of every message is decided in one place (Worker.prepare, in the
// fetch stage of the partition's pipeline: fetch.go) and carried out by the
// commit stage (Worker.process): applied → acknowledged after the commit;
// never applicable → copied to MEMINDEX_DLQ with its reason, then
// terminated. A shard records the last stream sequence it applied in the
// same transaction as the data, and a partition's consumer is (re)created at
// start to deliver from the sequence after it, so redeliveries and replays
// are no-ops and a deleted shard is rebuilt from the stream. The fetch stage
// decodes, plans and embeds the next batch while the commit stage commits
// the one before; batches still commit and are acknowledged one at a time in
// delivery order. What ingestion holds in memory is bounded: a partition's
// pull buffer in events and bytes (fetch.go pullBuffer), its batches in
// events and payload, and all partitions' batches together in payload
// (inflight.go).
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
// Snapshots (snapshot.go) keeps shard snapshots in the MEMINDEX_SNAPSHOTS
// object store (object "p<N>/<applied seq>", metadata describing the file,
// the newest Keep per partition) and restores the newest one of the
// worker's vector space in place of a shard, verified first; a worker that
// opens the restored shard replays the stream from the snapshot's applied
// sequence. Its Loop snapshots, every interval, the partitions the caller
// says it owns.
//
// Ownership: a Worker holds a set of partitions, fixed at New (a static
// owner) or changing while it runs (Config.Dynamic; Add and Remove). Every
// holder of a partition consumes it through its own durable consumer (the
// prefix names the worker) into its own shard file, so read replicas each
// see every message; holders never share a file. In a dynamic group
// (lease.go) a Leaser claims partition leases in the group's KV bucket
// (Create), renews them (Update with the last revision), spreads them
// evenly (ceil(P*R/members) each), hands them over on shutdown (Delete
// with the revision) and takes a dead worker's after the TTL. Slot 0 of a
// partition is its owner (the one that writes shared artefacts such as
// snapshots), the other R-1 slots read replicas; a replica takes over its
// partition's free owner slot, and a worker that can take no free slot
// because it holds all their partitions gets one by a swap
// (lease_replicas.go). The lease table is read whole even while every key
// is being renewed (lease_keys.go). Fencing: a lease is valid until TTL/2 after its
// last successful renewal by the holder's clock; Worker.SetFence makes the
// partition commit nothing after that instant, while the server lets
// another worker claim only TTL after that renewal.
//
// EventStreamDrift, DLQStreamDrift and ConsumerDrift (drift.go) compare a
// stream's or consumer's configuration with what memindex creates, field by
// field, for `memindex doctor`.
//
// Events never vanish in silence (gap.go): a partition whose next events
// were removed from the stream before it applied them (limits, purge), or
// whose stream was deleted and recreated below its applied sequence,
// reports the gap in Status (Error), Readiness (Gap) and an error log
// record; a batch that keeps failing to commit is reported in Readiness
// (ApplyErr) while it is retried.
//
// It must not serve queries, know the SQLite schema (it talks to a Shard
// interface) or read configuration from the environment.
package consumer
