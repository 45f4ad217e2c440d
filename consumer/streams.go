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
	// Replicas is the stream replica count (1 on a single server).
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

// EnsureStreams creates the event and dead-letter streams, or updates them to
// cfg, and returns the partition count in force. With cfg.Partitions 0 an
// existing stream keeps its count (a new one gets DefaultPartitions);
// asking an existing stream for another count is refused with
// ErrPartitionsChanged: it would move namespaces between shards.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) (int, error) {
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
	if err := cfg.Validate(); err != nil {
		return 0, fmt.Errorf("ensure streams: %w", err)
	}
	for _, sc := range []jetstream.StreamConfig{eventStreamConfig(cfg), dlqStreamConfig(cfg)} {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return 0, fmt.Errorf("ensure stream %s: %w", sc.Name, err)
		}
	}
	return cfg.Partitions, nil
}

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
