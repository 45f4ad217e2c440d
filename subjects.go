package memindex

import "strconv"

// Stream, consumer and service names, and the subjects they use. Publishers
// need only EventSubject; the rest is shared by the worker and its tools.
const (
	// StreamEvents is the JetStream stream holding every event: the source of truth.
	StreamEvents = "MEMINDEX_EVENTS"
	// StreamDLQ is the dead-letter stream holding events that can never apply.
	StreamDLQ = "MEMINDEX_DLQ"

	// EventSubjectPrefix is the prefix publishers publish under, followed by the namespace.
	EventSubjectPrefix = "memindex.events"
	// DLQSubjectPrefix is the prefix of dead-letter subjects: memindex.dlq.<partition>.<namespace>.
	DLQSubjectPrefix = "memindex.dlq"

	// ServiceName is the NATS micro service name every worker registers.
	ServiceName = "memindex"
	// SearchSubjectPrefix is the prefix of the search endpoint, followed by the namespace.
	SearchSubjectPrefix = "memindex.search"
	// StatusSubject is the status endpoint; every worker answers it.
	StatusSubject = "memindex.status"

	// PartitionSearchPrefix is the prefix of the per-partition search
	// subject memindex.psearch.<partition>.<namespace>: the caught-up holders
	// of a partition answer it in one queue group (replicas share the load).
	// A worker forwards a search it cannot answer there; the Go client sends
	// there directly.
	PartitionSearchPrefix = "memindex.psearch"
	// PartitionReadPrefix is the per-partition read subject prefix:
	// memindex.pread.<partition>.<namespace>.
	PartitionReadPrefix = "memindex.pread"
	// PartitionQueueGroup is the queue group of the per-partition subjects.
	PartitionQueueGroup = "memindex-holders"

	// DefaultPartitions is the number of partitions of a new stream.
	DefaultPartitions = 16
)

// NATS header names set on dead-lettered events and on published events.
const (
	// HeaderDLQReason says why the event can never apply.
	HeaderDLQReason = "Memindex-Dlq-Reason"
	// HeaderDLQSubject is the subject the event was originally published to.
	HeaderDLQSubject = "Memindex-Dlq-Subject"
	// HeaderDLQStreamSeq is the event's sequence in StreamEvents.
	HeaderDLQStreamSeq = "Memindex-Dlq-Stream-Seq"
	// HeaderDLQTime is when the event was dead-lettered (RFC 3339).
	HeaderDLQTime = "Memindex-Dlq-Time"
	// HeaderForwardedBy names the worker that received a search or read on
	// memindex.search.<ns> / memindex.read.<ns> without holding the
	// namespace's partition and relayed the holder's answer: a reply
	// without it came straight from a holder.
	HeaderForwardedBy = "Memindex-Forwarded-By"
	// HeaderTraceParent carries W3C trace context; NATS headers are case-sensitive.
	HeaderTraceParent = "traceparent"
)

// EventSubject returns the subject events of namespace ns are published to.
func EventSubject(ns string) string { return EventSubjectPrefix + "." + ns }

// StoredEventSubject returns the subject an event of ns is stored under after
// the stream's subject transform has added the partition token.
func StoredEventSubject(partition int, ns string) string {
	return EventSubjectPrefix + "." + strconv.Itoa(partition) + "." + ns
}

// PartitionFilter returns the filter subject of one partition's consumer.
func PartitionFilter(partition int) string {
	return EventSubjectPrefix + "." + strconv.Itoa(partition) + ".*"
}

// DLQSubject returns the dead-letter subject of an event of ns in partition.
func DLQSubject(partition int, ns string) string {
	return DLQSubjectPrefix + "." + strconv.Itoa(partition) + "." + ns
}

// SearchSubject returns the search endpoint subject of namespace ns.
func SearchSubject(ns string) string { return SearchSubjectPrefix + "." + ns }

// PartitionSearchSubject returns the subject the holders of partition p
// answer searches of namespace ns on.
func PartitionSearchSubject(p int, ns string) string {
	return PartitionSearchPrefix + "." + strconv.Itoa(p) + "." + ns
}

// PartitionReadSubject returns the subject the holders of partition p answer
// reads of namespace ns on.
func PartitionReadSubject(p int, ns string) string {
	return PartitionReadPrefix + "." + strconv.Itoa(p) + "." + ns
}
