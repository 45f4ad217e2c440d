package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// StreamConfig sets up the event and dead-letter streams.
type StreamConfig struct {
	// Partitions is P, the number of partitions; fixed for the life of a stream.
	Partitions int
	// Replicas is the replica count of both streams: 0 keeps an existing
	// stream's (1 for a new stream); more than 1 needs a JetStream cluster
	// of at least that many servers. Fewer than an existing stream's is
	// refused (ErrReplicasReduced). The partitions' durable consumers
	// inherit the stream's count.
	Replicas int
	// MaxAge bounds how long events are kept; 0 keeps them forever, which a
	// rebuild from the stream needs.
	MaxAge time.Duration
	// Duplicates is the publish de-duplication window (Nats-Msg-Id).
	Duplicates time.Duration
}

// Validate fills defaults and checks the values.
func (c *StreamConfig) Validate() error {
	if c.Partitions == 0 {
		c.Partitions = memindex.DefaultPartitions
	}
	if c.Partitions < 1 || c.Partitions > 1024 {
		return fmt.Errorf("partitions must be between 1 and 1024, got %d", c.Partitions)
	}
	if c.Replicas < 0 || c.Replicas > MaxStreamReplicas {
		return fmt.Errorf("stream replicas must be between 1 and %d (0: keep the existing stream's), got %d", MaxStreamReplicas, c.Replicas)
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Duplicates == 0 {
		c.Duplicates = 2 * time.Minute
	}
	return nil
}

func eventStreamConfig(c StreamConfig) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        memindex.StreamEvents,
		Description: "memindex session-change events; the source of truth for every shard",
		Subjects:    []string{memindex.EventSubjectPrefix + ".*"},
		SubjectTransform: &jetstream.SubjectTransformConfig{
			Source:      memindex.EventSubjectPrefix + ".*",
			Destination: memindex.EventSubjectPrefix + ".{{partition(" + strconv.Itoa(c.Partitions) + ",1)}}.{{wildcard(1)}}",
		},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   c.Replicas,
		MaxAge:     c.MaxAge,
		Duplicates: c.Duplicates,
		MaxMsgSize: memindex.MaxEventBytes,
	}
}

func dlqStreamConfig(c StreamConfig) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        memindex.StreamDLQ,
		Description: "memindex events that can never apply, with their reason; see `memindex dlq`",
		Subjects:    []string{memindex.DLQSubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		Duplicates:  c.Duplicates,
	}
}

// MaxStreamReplicas is the largest replica count JetStream accepts.
const MaxStreamReplicas = 5

// EnsureStreams creates the event and dead-letter streams, or updates them to
// cfg, and returns the partition count in force. With cfg.Partitions 0 an
// existing stream keeps its count (a new one gets DefaultPartitions);
// asking an existing stream for another count is refused with
// ErrPartitionsChanged: it would move namespaces between shards. Replicas
// work the same way per stream (0 keeps them), except that more is allowed
// (JetStream adds the copies) and fewer is refused with ErrReplicasReduced.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) (int, error) {
	return retryAttempts(ctx, func(actx context.Context) (int, error) { return ensureStreams(actx, js, cfg) })
}

// retryAttempts runs create in attempts of streamAttempt each until it
// succeeds, fails for another reason than a timeout or a name already in
// use, or ctx ends: creating a replicated stream, KV bucket or object store
// that other workers create at the same moment can go unanswered. Kept
// rather than cenkalti/backoff/v5's Retry: this returns the last attempt's
// error (which create went unanswered) when ctx ends, Retry only
// context.Cause, and a fixed short pause needs no backoff policy.
func retryAttempts[T any](ctx context.Context, create func(context.Context) (T, error)) (T, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, streamAttempt)
		v, err := create(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return v, err
		}
		select { // a short pause before the next attempt
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// streamAttempt bounds one attempt of EnsureStreams. In a cluster, when
// several workers create the same replicated stream at once, requests of
// those that lose the race can go unanswered for good (seen with
// nats-server 2.15.2: TestEnsureStreamsConcurrentlyInACluster); a new
// attempt finds the stream and gets its answer.
const streamAttempt = 5 * time.Second

func ensureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) (int, error) {
	if cfg.Replicas < 0 || cfg.Replicas > MaxStreamReplicas {
		return 0, fmt.Errorf("ensure streams: stream replicas must be between 1 and %d (0: keep the existing stream's), got %d", MaxStreamReplicas, cfg.Replicas)
	}
	if s, err := js.Stream(ctx, memindex.StreamEvents); err == nil {
		got, perr := StreamPartitions(s.CachedInfo().Config)
		switch {
		case perr != nil:
		case cfg.Partitions == 0:
			cfg.Partitions = got
		case got != cfg.Partitions:
			return 0, fmt.Errorf("ensure streams: stream %s has %d partitions, configured %d: %w",
				memindex.StreamEvents, got, cfg.Partitions, ErrPartitionsChanged)
		}
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, fmt.Errorf("ensure streams: %w", err)
	}
	want := cfg.Replicas
	if err := cfg.Validate(); err != nil {
		return 0, fmt.Errorf("ensure streams: %w", err)
	}
	for _, sc := range []jetstream.StreamConfig{eventStreamConfig(cfg), dlqStreamConfig(cfg)} {
		r, err := streamReplicas(ctx, js, sc.Name, want)
		if err != nil {
			return 0, fmt.Errorf("ensure stream %s: %w", sc.Name, err)
		}
		sc.Replicas = r
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			if replicasUnavailable(err) {
				return 0, fmt.Errorf("ensure stream %s with %d replicas: %w (server says: %v)", sc.Name, r, ErrReplicasUnavailable, err)
			}
			return 0, fmt.Errorf("ensure stream %s: %w", sc.Name, err)
		}
	}
	return cfg.Partitions, nil
}

// streamReplicas returns the replica count to give stream name: want, or
// with want 0 the existing stream's (1 for a new one). Fewer than the
// existing stream's is refused.
func streamReplicas(ctx context.Context, js jetstream.JetStream, name string, want int) (int, error) {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return max(want, 1), nil
	}
	if err != nil {
		return 0, err
	}
	have := s.CachedInfo().Config.Replicas
	switch {
	case want == 0:
		return max(have, 1), nil
	case want < have:
		return 0, fmt.Errorf("stream has %d replicas, configured %d; configure %d (or 0 to keep them), or reduce them deliberately with `nats stream edit %s --replicas %d`: %w",
			have, want, have, name, want, ErrReplicasReduced)
	}
	return want, nil
}

// replicasUnavailable reports whether err is JetStream refusing replicas it
// cannot place: replicas on a single server, or more than the cluster has.
func replicasUnavailable(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case jsErrReplicasNotSupported, jsErrInsufficientResources, jsErrNoSuitablePeers:
		return true
	}
	return false
}

// JetStream API error codes (nats-server errors.json) that mean the
// stream's replicas cannot be placed.
const (
	jsErrReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas > 1 not supported in non-clustered mode
	jsErrInsufficientResources jetstream.ErrorCode = 10023 // insufficient resources
	jsErrNoSuitablePeers       jetstream.ErrorCode = 10005 // no suitable peers for placement
)

// StreamPartitions reads P back from the event stream's subject transform.
func StreamPartitions(sc jetstream.StreamConfig) (int, error) {
	if sc.SubjectTransform == nil {
		return 0, errors.New("stream has no subject transform")
	}
	d := sc.SubjectTransform.Destination
	i := strings.Index(d, "partition(")
	if i < 0 {
		return 0, fmt.Errorf("subject transform %q has no partition()", d)
	}
	rest := d[i+len("partition("):]
	j := strings.IndexByte(rest, ',')
	if j < 0 {
		return 0, fmt.Errorf("subject transform %q is malformed", d)
	}
	return strconv.Atoi(rest[:j])
}

// DefaultConsumerPrefix starts the durable consumer names of a worker's
// partitions: memindex-p0, memindex-p1, ...
const DefaultConsumerPrefix = "memindex"

// ConsumerName is the durable consumer name of partition p under prefix.
func ConsumerName(prefix string, p int) string { return prefix + "-p" + strconv.Itoa(p) }
