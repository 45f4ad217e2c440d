package consumer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// Drift is one setting of a stream or consumer that differs from what
// memindex creates. Field is the setting's JSON name in the JetStream API
// (as `nats stream info --json` shows it); Have and Want are readable values.
type Drift struct {
	Field string `json:"field"`
	Have  string `json:"have"`
	Want  string `json:"want"`
}

// String reads "field: have X, want Y".
func (d Drift) String() string {
	return d.Field + ": have " + d.Have + ", want " + d.Want
}

// EventStreamDrift compares the event stream's configuration have with
// the one EnsureStreams sets for cfg: subjects, subject transform (with
// the partition count), retention, storage, replicas, largest message and
// age limit (events must be kept for a rebuild).
func EventStreamDrift(have jetstream.StreamConfig, cfg StreamConfig) ([]Drift, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("event stream drift: %w", err)
	}
	return streamDrift(have, eventStreamConfig(cfg)), nil
}

// DLQStreamDrift compares the dead-letter stream's configuration have with
// the one EnsureStreams sets for cfg, field by field as EventStreamDrift.
func DLQStreamDrift(have jetstream.StreamConfig, cfg StreamConfig) ([]Drift, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dlq stream drift: %w", err)
	}
	return streamDrift(have, dlqStreamConfig(cfg)), nil
}

func streamDrift(have, want jetstream.StreamConfig) []Drift {
	var out []Drift
	add := func(field, h, w string) {
		if h != w {
			out = append(out, Drift{Field: field, Have: h, Want: w})
		}
	}
	add("subjects", driftList(have.Subjects), driftList(want.Subjects))
	add("subject_transform", driftTransform(have.SubjectTransform), driftTransform(want.SubjectTransform))
	add("retention", have.Retention.String(), want.Retention.String())
	add("storage", have.Storage.String(), want.Storage.String())
	add("num_replicas", strconv.Itoa(max(have.Replicas, 1)), strconv.Itoa(max(want.Replicas, 1)))
	add("max_msg_size", driftLimit(int64(have.MaxMsgSize)), driftLimit(int64(want.MaxMsgSize)))
	add("max_age", driftAge(have.MaxAge.String(), have.MaxAge == 0), driftAge(want.MaxAge.String(), want.MaxAge == 0))
	return out
}

// ConsumerDrift compares partition p's durable consumer configuration have
// with what a worker creates: the partition's filter subject, AckAll (a
// batch is acknowledged by its last message, after its commit) and
// unlimited deliveries (a message is never dropped for redeliveries).
func ConsumerDrift(have jetstream.ConsumerConfig, p int) []Drift {
	var out []Drift
	filter := have.FilterSubject
	if filter == "" && len(have.FilterSubjects) > 0 {
		filter = driftList(have.FilterSubjects)
	}
	if want := memindex.PartitionFilter(p); filter != want {
		out = append(out, Drift{Field: "filter_subject", Have: driftNone(filter), Want: want})
	}
	if have.AckPolicy != jetstream.AckAllPolicy {
		out = append(out, Drift{Field: "ack_policy", Have: have.AckPolicy.String(), Want: jetstream.AckAllPolicy.String()})
	}
	if have.MaxDeliver > 0 {
		out = append(out, Drift{Field: "max_deliver", Have: strconv.Itoa(have.MaxDeliver), Want: "unlimited"})
	}
	return out
}

func driftList(s []string) string {
	s = slices.Clone(s)
	slices.Sort(s)
	return driftNone(strings.Join(s, ","))
}

func driftTransform(t *jetstream.SubjectTransformConfig) string {
	if t == nil {
		return "none"
	}
	return t.Source + " -> " + t.Destination
}

func driftLimit(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

func driftAge(s string, none bool) string {
	if none {
		return "unlimited"
	}
	return s
}

func driftNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
