package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/internal/natstest"
)

// TestPublishIsIdempotent publishes into the streams a worker creates
// (consumer.EnsureStreams, on an in-process nats-server): an event sent
// twice is stored once, under the Nats-Msg-Id rule of `memindex publish`,
// as a payload the worker decodes back to the event; an invalid event is
// refused before it is sent; without the stream the error wraps
// ErrNoWorker.
func TestPublishIsIdempotent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := natstest.Server(t)
	nc := natstest.Connect(t, s)
	c := client.NewClient(nc)
	msg := memindex.Event{Namespace: "agent-7", SessionKey: "whatsapp:+4912345", SessionID: "s1", Seq: 1, Role: "user", Speaker: "Ana", Text: "I move to Lisbon in May."}
	if _, err := c.Publish(ctx, msg); !errors.Is(err, client.ErrNoWorker) {
		t.Fatalf("Publish() before any stream = %v, want ErrNoWorker", err)
	}

	js, err := jetstream.New(nc)
	mustTB(t, err)
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	record := memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: "agent-7", ID: "pref-1", Text: "Ana prefers trains."}
	batch := memindex.Event{Type: memindex.TypeMessages, Namespace: "agent-7", SessionKey: "whatsapp:+4912345", SessionID: "s1",
		Messages: []memindex.Message{{Seq: 3, Text: "Which day?"}, {Seq: 4, Role: "assistant", Text: "Thursday."}}}
	tests := []struct {
		name      string
		ev        memindex.Event
		wantSeq   uint64
		wantDup   bool
		wantMsgID string
	}{
		{"message", msg, 1, false, "agent-7/whatsapp:+4912345/s1/1"},
		{"message again", msg, 1, true, "agent-7/whatsapp:+4912345/s1/1"},
		{"record", record, 2, false, ""},
		{"record again", record, 2, true, ""},
		{"next message", memindex.Event{Namespace: "agent-7", SessionKey: "whatsapp:+4912345", SessionID: "s1", Seq: 2, Text: "Trains, always."}, 3, false, "agent-7/whatsapp:+4912345/s1/2"},
		{"messages", batch, 4, false, ""},
		{"messages again", batch, 4, true, ""},
	}
	stream, err := js.Stream(ctx, memindex.StreamEvents)
	mustTB(t, err)
	for _, tt := range tests {
		ack, err := c.Publish(ctx, tt.ev)
		if err != nil {
			t.Fatalf("%s: Publish: %v", tt.name, err)
		}
		if ack.Seq != tt.wantSeq || ack.Duplicate != tt.wantDup {
			t.Fatalf("%s: Publish()=%+v, want seq %d duplicate %v", tt.name, ack, tt.wantSeq, tt.wantDup)
		}
		stored, err := stream.GetMsg(ctx, ack.Seq)
		mustTB(t, err)
		id := stored.Header.Get(nats.MsgIdHdr)
		if tt.wantMsgID != "" && id != tt.wantMsgID {
			t.Fatalf("%s: stored Nats-Msg-Id %q, want %q", tt.name, id, tt.wantMsgID)
		}
		if want := client.MsgID(tt.ev, stored.Data); id != want {
			t.Fatalf("%s: stored Nats-Msg-Id %q, want MsgID()=%q", tt.name, id, want)
		}
		got, err := memindex.DecodeEvent(stored.Data)
		mustTB(t, err)
		want := tt.ev
		if want.Type == "" {
			want.Type = memindex.TypeMessage
		}
		if got.Type != want.Type || got.Namespace != want.Namespace || got.Seq != want.Seq || got.Text != want.Text || got.ID != want.ID ||
			!slices.Equal(got.Messages, want.Messages) {
			t.Fatalf("%s: the worker decodes %+v, want %+v", tt.name, got, want)
		}
		if wantSubj := memindex.StoredEventSubject(memindex.Partition("agent-7", 4), "agent-7"); stored.Subject != wantSubj {
			t.Fatalf("%s: stored on %s, want %s", tt.name, stored.Subject, wantSubj)
		}
	}
	info, err := stream.Info(ctx)
	mustTB(t, err)
	if info.State.Msgs != 4 {
		t.Fatalf("stream holds %d events after 7 publishes of 4 distinct events, want 4", info.State.Msgs)
	}

	bad := msg
	bad.Seq = 0
	var fe *memindex.FieldError
	if _, err := c.Publish(ctx, bad); !errors.Is(err, memindex.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "seq" {
		t.Fatalf("Publish(no seq)=%v, want a FieldError for seq wrapping ErrInvalid", err)
	}
	badBatch := batch
	badBatch.Messages = []memindex.Message{{Seq: 5, Text: "fine"}, {Seq: 5, Text: "the same seq"}}
	if _, err := c.Publish(ctx, badBatch); !errors.Is(err, memindex.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "messages[1].seq" {
		t.Fatalf("Publish(a seq twice)=%v, want a FieldError for messages[1].seq wrapping ErrInvalid", err)
	}
	if info, _ := stream.Info(ctx); info.State.Msgs != 4 {
		t.Fatalf("stream holds %d events after invalid publishes, want still 4", info.State.Msgs)
	}
}
