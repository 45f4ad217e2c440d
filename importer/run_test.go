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

// TestRunMsgIDs publishes the sample into a JetStream stream (no worker):
// every message carries the Nats-Msg-Id of its session position, the
// source lines' order is kept, and a second Run is all duplicates.
func TestRunMsgIDs(t *testing.T) {
	nc, js := natstest.ConnectJetStream(t, natstest.Server(t))
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"memindex.events.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := importer.Inputs([]string{sampleDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var acked int64
	cfg := importer.Config{Namespace: "demo", MaxPending: 2, Acked: func(n int64) { acked = n }}
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
