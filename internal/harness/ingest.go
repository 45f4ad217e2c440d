package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// Ingested is one corpus published into a node and applied.
type Ingested struct {
	Messages int
	// Chunks is how many chunks the node's shards gained.
	Chunks int64
	// Seconds is from the first publish to the last commit.
	Seconds float64
}

// PerSecond is messages per second over Seconds.
func (i Ingested) PerSecond() float64 { return float64(i.Messages) / i.Seconds }

// Ingest publishes lines (namespace ns where a line names none) into n's
// stream and waits until every partition has applied them. It waits on the
// worker's applied sequences (a counter in memory), not on counting the
// shards' rows, so waiting costs the ingest nothing.
func (h Hooks) Ingest(ctx context.Context, n Node, lines [][]byte, ns string) (Ingested, error) {
	if h.EventMsg == nil {
		return Ingested{}, ErrNoHooks
	}
	before := Count(ctx, n)
	js, err := jetstream.New(n.Conn(), jetstream.WithPublishAsyncMaxPending(2*PublishWindow))
	if err != nil {
		return Ingested{}, err
	}
	start := time.Now() // the lines become messages in the timed part, as `memindex publish` does them
	msgs := make([]*nats.Msg, len(lines))
	parts := make([]int, len(lines))
	for i, l := range lines {
		if msgs[i], err = h.EventMsg(l, ns); err != nil {
			return Ingested{}, err
		}
		parts[i] = PartitionOfSubject(msgs[i].Subject, n.Partitions())
	}
	last, err := Publish(ctx, js, msgs, parts)
	if err != nil {
		return Ingested{}, err
	}
	for {
		done := true
		for p, seq := range last {
			if n.Applied(p) < seq {
				done = false
				break
			}
		}
		if done {
			el := time.Since(start).Seconds()
			return Ingested{Messages: len(lines), Chunks: Count(ctx, n).Chunks - before.Chunks, Seconds: el}, nil
		}
		select {
		case <-ctx.Done():
			return Ingested{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// Totals are row counts summed over a node's shards.
type Totals struct{ Messages, Chunks, VectorsWaiting int64 }

// Count sums the statistics of n's shards (a shard whose Stats fails, as
// one closing, counts nothing).
func Count(ctx context.Context, n Node) Totals {
	var t Totals
	for _, sh := range n.Shards() {
		if st, err := sh.Stats(ctx); err == nil {
			t.Messages += st.Messages
			t.Chunks += st.Chunks
			t.VectorsWaiting += st.VectorsWaiting
		}
	}
	return t
}

// WaitVectors waits until n's shards hold want messages and no chunk
// waits for its vector.
func WaitVectors(ctx context.Context, n Node, want int64) error {
	for {
		if t := Count(ctx, n); t.Messages >= want && t.VectorsWaiting == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// PublishWindow is how many acknowledgements Publish lets be in flight; its
// JetStream context must allow more (jetstream.WithPublishAsyncMaxPending),
// or publishing stalls.
const PublishWindow = 4096

// Publish publishes msgs at full speed, PublishWindow acknowledgements in
// flight, and returns each partition's last stream sequence (parts[i] is
// msgs[i]'s partition).
func Publish(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, parts []int) (map[int]uint64, error) {
	futures := make([]jetstream.PubAckFuture, len(msgs))
	for i, m := range msgs {
		var err error
		if futures[i], err = js.PublishMsgAsync(m); err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		if i%PublishWindow == PublishWindow-1 {
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	last := map[int]uint64{}
	for i, f := range futures {
		select {
		case a := <-f.Ok():
			last[parts[i]] = max(last[parts[i]], a.Sequence)
		case err := <-f.Err():
			return nil, fmt.Errorf("publish: %w", err)
		}
	}
	return last, nil
}

// PartitionOfSubject is the partition of an event published on subject
// (memindex.events.<namespace>).
func PartitionOfSubject(subject string, partitions int) int {
	return memindex.Partition(strings.TrimPrefix(subject, memindex.EventSubjectPrefix+"."), partitions)
}
