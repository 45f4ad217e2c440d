package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/internal/natstest"
)

// TestPublishReturnsEachPartitionsLastSequence publishes more messages
// than one window of acknowledgements over many namespaces into the event
// stream and checks that Publish names, for every partition, the stream
// sequence of the last message the stream stored under that partition, by
// the stream's own subject transform.
func TestPublishReturnsEachPartitionsLastSequence(t *testing.T) {
	srv := natstest.Server(t)
	_, js := natstest.ConnectJetStream(t, srv, jetstream.WithPublishAsyncMaxPending(PublishWindow*2))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const P = 16
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: P}); err != nil {
		t.Fatal(err)
	}
	const n = 2*PublishWindow + 808 // more than two windows
	msgs := make([]*nats.Msg, n)
	parts := make([]int, n)
	for i := range msgs {
		ns := fmt.Sprintf("ns-%d", i%37)
		msgs[i] = nats.NewMsg(memindex.EventSubject(ns))
		msgs[i].Data = fmt.Appendf(nil, `{"type":"message","namespace":%q,"sessionKey":"s","sessionId":"1","seq":%d,"text":"x"}`, ns, i+1)
		msgs[i].Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/s/1/%d", ns, i+1))
		parts[i] = PartitionOfSubject(msgs[i].Subject, P)
	}
	last, err := Publish(ctx, js, msgs, parts)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	st, err := js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != n {
		t.Fatalf("stream holds %v messages (err %v), want %d", info.State.Msgs, err, n)
	}
	seen := 0
	for p := range P {
		m, err := st.GetLastMsgForSubject(ctx, memindex.PartitionFilter(p))
		if err != nil {
			if _, ok := last[p]; ok {
				t.Errorf("partition %d: Publish says last seq %d, the stream has none: %v", p, last[p], err)
			}
			continue
		}
		seen++
		if last[p] != m.Sequence {
			t.Errorf("partition %d: Publish says last seq %d, the stream's last is %d", p, last[p], m.Sequence)
		}
	}
	if seen != len(last) || seen < 2 {
		t.Errorf("Publish named %d partitions, the stream holds %d; want the same, more than one", len(last), seen)
	}
}

// TestStartWithoutHooks checks that a run without the binary's hooks is
// refused, not a nil call.
func TestStartWithoutHooks(t *testing.T) {
	if _, _, err := (Hooks{}).Start(context.Background(), NodeSpec{Dir: t.TempDir()}); !errors.Is(err, ErrNoHooks) {
		t.Fatalf("Start without hooks: %v, want ErrNoHooks", err)
	}
	if _, err := (Hooks{}).Ingest(context.Background(), nil, nil, ""); !errors.Is(err, ErrNoHooks) {
		t.Fatalf("Ingest without hooks: %v, want ErrNoHooks", err)
	}
}
