package consumer

import "errors"

// Sentinel errors of package consumer.
var (
	// ErrPartitionsChanged is returned by EnsureStreams when the configured
	// partition count differs from the existing stream's.
	ErrPartitionsChanged = errors.New("partition count of an existing stream cannot change")
	// ErrWrongNamespace is wrapped when an event's namespace field differs
	// from the namespace of the subject it was published to.
	ErrWrongNamespace = errors.New("wrong namespace")
	// ErrNotInDLQ is returned when a dead-letter sequence does not exist.
	ErrNotInDLQ = errors.New("no such dead-lettered event")
)
