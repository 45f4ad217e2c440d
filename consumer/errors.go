package consumer

import "errors"

// Sentinel errors of package consumer.
var (
	// ErrPartitionsChanged is returned by EnsureStreams when the configured
	// partition count differs from the existing stream's.
	ErrPartitionsChanged = errors.New("partition count of an existing stream cannot change")
	// ErrReplicasReduced is returned by EnsureStreams when the configured
	// stream replica count is below an existing stream's: memindex never
	// lowers a stream's redundancy on its own.
	ErrReplicasReduced = errors.New("replica count of an existing stream is not reduced by memindex")
	// ErrReplicasUnavailable is wrapped when the server cannot place the
	// configured stream replicas: a single server (not a cluster), or a
	// cluster with fewer JetStream servers than replicas.
	ErrReplicasUnavailable = errors.New("stream replicas need a JetStream cluster with at least that many servers")
	// ErrWrongNamespace is wrapped when an event's namespace field differs
	// from the namespace of the subject it was published to.
	ErrWrongNamespace = errors.New("wrong namespace")
	// ErrNotInDLQ is returned when a dead-letter sequence does not exist.
	ErrNotInDLQ = errors.New("no such dead-lettered event")
	// ErrFenced is wrapped when a partition's batch is not committed because
	// the lease that lets this worker write it ended (Worker.SetFence).
	ErrFenced = errors.New("partition lease ended: not writing")
	// ErrHeld is returned by Worker.Add for a partition already held.
	ErrHeld = errors.New("partition already held")
	// ErrNotHeld is returned by Worker.Remove for a partition not held.
	ErrNotHeld = errors.New("partition not held")
	// ErrLeaseLost is wrapped when a lease renewal finds that the lease is
	// no longer this worker's (another claimed it after it expired, or the
	// key was changed).
	ErrLeaseLost = errors.New("partition lease lost")
	// ErrDeliveryGap is wrapped when a partition's consumer delivered a
	// message whose delivery sequence skips some: deliveries were lost on
	// the way (a consumer leader change, a cut connection), and committing
	// the batch would acknowledge, under AckAll, events never applied. The
	// batch is dropped and the consumer re-positioned from the shard.
	ErrDeliveryGap = errors.New("consumer deliveries lost in transit")
	// ErrStreamGap is wrapped when events a partition had not applied are
	// gone from the event stream (aged out by its limits, purged), or the
	// stream ends before the partition's applied sequence (deleted and
	// recreated): the shard may miss events; see gap.go.
	ErrStreamGap = errors.New("events missing from the stream")
)
