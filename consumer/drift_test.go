package consumer

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestEventStreamDrift(t *testing.T) {
	cfg := StreamConfig{Partitions: 4}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*jetstream.StreamConfig)
		want   []string
	}{
		{"as created", func(*jetstream.StreamConfig) {}, nil},
		{"subjects and retention", func(c *jetstream.StreamConfig) {
			c.Subjects = []string{"other.>"}
			c.Retention = jetstream.WorkQueuePolicy
		}, []string{"subjects", "retention"}},
		{"transform with another partition count", func(c *jetstream.StreamConfig) {
			c.SubjectTransform = eventStreamConfig(StreamConfig{Partitions: 8}).SubjectTransform
		}, []string{"subject_transform"}},
		{"storage replicas size age", func(c *jetstream.StreamConfig) {
			c.Storage, c.Replicas, c.MaxMsgSize, c.MaxAge = jetstream.MemoryStorage, 3, 10, 5e9
		}, []string{"storage", "num_replicas", "max_msg_size", "max_age"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := eventStreamConfig(cfg)
			tc.change(&have)
			got, err := EventStreamDrift(have, StreamConfig{Partitions: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("EventStreamDrift = %v, want fields %v", got, tc.want)
			}
			for i, d := range got {
				if d.Field != tc.want[i] || d.Have == d.Want {
					t.Errorf("drift %d = %+v, want field %s with different values", i, d, tc.want[i])
				}
			}
		})
	}
}

func TestConsumerDrift(t *testing.T) {
	ok := jetstream.ConsumerConfig{FilterSubject: "memindex.events.3.*", AckPolicy: jetstream.AckAllPolicy, MaxDeliver: -1}
	if got := ConsumerDrift(ok, 3); len(got) != 0 {
		t.Fatalf("ConsumerDrift(as created) = %v, want none", got)
	}
	bad := jetstream.ConsumerConfig{FilterSubject: "memindex.events.2.*", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5}
	got := ConsumerDrift(bad, 3)
	if len(got) != 3 || got[0].Field != "filter_subject" || got[1].Field != "ack_policy" || got[2].Field != "max_deliver" {
		t.Fatalf("ConsumerDrift = %v, want filter_subject, ack_policy, max_deliver", got)
	}
}
