package importer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/importer"
	"memindex/internal/natstest"
)

// TestRunNoStream: with no stream to take the events, Run says so at once
// and sends nothing.
func TestRunNoStream(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t))
	ins, err := importer.Inputs([]string{sampleDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = importer.Run(context.Background(), nc, ins, importer.Config{Namespace: "demo"})
	if !errors.Is(err, client.ErrNoWorker) || time.Since(start) > 3*time.Second {
		t.Fatalf("Run without a stream: %v after %s, want ErrNoWorker at once", err, time.Since(start))
	}
}

// TestRunMsgIDs publishes the sample into a JetStream stream (no worker)
// one event a message (EventMessages 1): every message carries the
// Nats-Msg-Id of its session position, the source lines' order is kept,
// and a second Run is all duplicates.
func TestRunMsgIDs(t *testing.T) {
	ctx := context.Background()
	nc, st, ins := sampleStream(t)
	var acked int64
	cfg := importer.Config{Namespace: "demo", MaxPending: 2, EventMessages: 1, Acked: func(n int64) { acked = n }}
	sum, err := importer.Run(ctx, nc, ins, cfg)
	if err != nil || sum.Published != 6 || sum.Duplicates != 0 || sum.LastSeq != 6 || acked != 6 {
		t.Fatalf("Run = %+v, %v (acked %d); want 6 published, last seq 6", sum, err, acked)
	}
	for seq := uint64(1); seq <= 6; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := memindex.DecodeEvent(m.Data)
		want := fmt.Sprintf("demo/%s/%s/%d", sampleKey, sampleID, seq)
		if err != nil || ev.Seq != int64(seq) || m.Header.Get(nats.MsgIdHdr) != want || m.Subject != memindex.EventSubject("demo") {
			t.Fatalf("stream message %d: %s %q (%v), id %q; want seq %d with id %s", seq, m.Subject, m.Data, err, m.Header.Get(nats.MsgIdHdr), seq, want)
		}
	}
	sum, err = importer.Run(ctx, nc, ins, cfg)
	if err != nil || sum.Published != 0 || sum.Duplicates != 6 {
		t.Fatalf("second Run = %+v, %v; want 6 duplicates", sum, err)
	}
	if info, _ := st.Info(ctx); info.State.Msgs != 6 {
		t.Fatalf("stream holds %d messages after two runs, want 6", info.State.Msgs)
	}
	// A bad line is named and the rest published.
	ins, _ = importer.Inputs([]string{"-"}, strings.NewReader("{\"sessionKey\":\"k\",\"sessionId\":\"s\",\"text\":\"a\"}\n{\"sessionKey\":\"k\"}\n{\"sessionKey\":\"k\",\"sessionId\":\"s\",\"text\":\"b\"}\n"))
	var problems []string
	sum, err = importer.Run(ctx, nc, ins, importer.Config{Namespace: "demo", Problem: func(p importer.Problem) { problems = append(problems, p.String()) }})
	if err != nil || sum.Published != 2 || sum.BadLines != 1 || len(problems) != 1 || !strings.HasPrefix(problems[0], "-:2: sessionId") {
		t.Fatalf("Run with a bad line = %+v, %v, problems %q", sum, err, problems)
	}
}

// TestRunGroupsASessionsMessages: by default the sample's session, 6
// messages, goes out as one messages event holding them in order, whose
// Nats-Msg-Id is the hash of its payload; counts are of messages; a second
// Run is 6 duplicate messages and stores nothing.
func TestRunGroupsASessionsMessages(t *testing.T) {
	ctx := context.Background()
	nc, st, ins := sampleStream(t)
	var acked int64
	cfg := importer.Config{Namespace: "demo", Acked: func(n int64) { acked = n }}
	sum, err := importer.Run(ctx, nc, ins, cfg)
	if err != nil || sum.Messages != 6 || sum.Published != 6 || sum.Duplicates != 0 || sum.LastSeq != 1 || acked != 6 {
		t.Fatalf("Run = %+v, %v (acked %d); want 6 messages published in one event", sum, err, acked)
	}
	m, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := memindex.DecodeEvent(m.Data)
	if err != nil || ev.Type != memindex.TypeMessages || ev.SessionKey != sampleKey || ev.SessionID != sampleID || len(ev.Messages) != 6 {
		t.Fatalf("stream message 1: %q (%v); want a messages event of the sample's 6 messages", m.Data, err)
	}
	for i, msg := range ev.Messages {
		if msg.Seq != int64(i+1) || msg.Text == "" {
			t.Fatalf("message %d of the event: %+v, want seq %d with its text", i, msg, i+1)
		}
	}
	if id := m.Header.Get(nats.MsgIdHdr); id != client.MsgID(ev, m.Data) {
		t.Fatalf("Nats-Msg-Id %q, want MsgID's %q", id, client.MsgID(ev, m.Data))
	}
	sum, err = importer.Run(ctx, nc, ins, cfg)
	if err != nil || sum.Published != 0 || sum.Duplicates != 6 || acked != 6 {
		t.Fatalf("second Run = %+v, %v (acked %d); want 6 duplicate messages", sum, err, acked)
	}
	if info, _ := st.Info(ctx); info.State.Msgs != 1 {
		t.Fatalf("stream holds %d events after two runs, want 1", info.State.Msgs)
	}
}

// TestDryRunGroups: a session's run of messages goes out as one event while
// its seqs rise and it is within EventMessages and 128 KiB of text, with
// other sessions' messages between them (client.Grouper keeps a run a
// session open); a run of one is a plain message event.
func TestDryRunGroups(t *testing.T) {
	lines := []string{
		`{"sessionKey":"a","sessionId":"s","seq":1,"text":"a1"}`,
		`{"sessionKey":"a","sessionId":"s","seq":2,"text":"a2"}`,
		`{"sessionKey":"a","sessionId":"s","seq":3,"text":"a3"}`,
		`{"sessionKey":"a","sessionId":"s","seq":4,"text":"a4"}`, // a run of 4 is cut at 3
		`{"sessionKey":"b","sessionId":"s","seq":1,"text":"b1"}`, // another session, open beside a's
		`{"sessionKey":"a","sessionId":"s","seq":5,"text":"a5"}`, // joins a4 across b1
		`{"sessionKey":"a","sessionId":"t","seq":1,"text":"t1"}`, // another sessionId
		`{"sessionKey":"a","sessionId":"t","seq":2,"text":"t2"}`,
		`{"sessionKey":"c","sessionId":"s","seq":5,"text":"c5"}`,
		`{"sessionKey":"c","sessionId":"s","seq":3,"text":"c3"}`, // a seq below the one before
	}
	// Three texts of 60 KiB: two fill an event's 128 KiB of text.
	for seq := 1; seq <= 3; seq++ {
		lines = append(lines, fmt.Sprintf(`{"sessionKey":"d","sessionId":"s","seq":%d,"text":"%s"}`, seq, strings.Repeat("x", 60<<10)))
	}
	ins, err := importer.Inputs([]string{"-"}, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sum, err := importer.DryRun(context.Background(), ins, importer.Config{Namespace: "demo", EventMessages: 3}, &out)
	if err != nil || sum.Messages != 13 {
		t.Fatalf("DryRun = %+v, %v; want 13 messages", sum, err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		ev, err := memindex.DecodeEvent([]byte(l))
		if err != nil {
			t.Fatalf("DryRun printed %q: %v", l, err)
		}
		desc := fmt.Sprintf("%s %s/%s", ev.Type, ev.SessionKey, ev.SessionID)
		if ev.Type == memindex.TypeMessage {
			desc += fmt.Sprintf(" %d", ev.Seq)
		}
		for _, m := range ev.Messages {
			desc += fmt.Sprintf(" %d", m.Seq)
		}
		got = append(got, desc)
	}
	// Sent as they end: a full run, c5 when c3 does not follow it, d1 d2 at
	// 128 KiB; then the open runs, in the order they were opened.
	want := []string{"messages a/s 1 2 3", "message c/s 5", "messages d/s 1 2",
		"messages a/s 4 5", "message b/s 1", "messages a/t 1 2", "message c/s 3", "message d/s 3"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("DryRun events = %q, want %q", got, want)
	}
}

// sampleStream returns a connection to a new JetStream server holding a
// stream of memindex's event subjects (no worker), the stream, and the
// sample's inputs.
func sampleStream(t *testing.T) (*nats.Conn, jetstream.Stream, []importer.Input) {
	t.Helper()
	nc, js := natstest.ConnectJetStream(t, natstest.Server(t))
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "EV", Subjects: []string{"memindex.events.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := importer.Inputs([]string{sampleDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return nc, st, ins
}
