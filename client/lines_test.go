package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/internal/natstest"
)

// TestPublishLines publishes a JSONL file into the streams a worker creates:
// bad lines are rejected with their line number and the lines around them
// are still stored, a line sent twice is stored once, and the message ids
// follow MsgID's rule for messages and the eventId for lines that name one.
func TestPublishLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := natstest.Server(t)
	nc := natstest.Connect(t, s)
	js, err := jetstream.New(nc)
	mustTB(t, err)
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join([]string{
		`{"sessionKey":"k","sessionId":"s","seq":1,"role":"user","text":"I move to Lisbon in May."}`,
		``,
		`{"sessionKey":"k","seq":`,
		`{"namespace":"no spaces","sessionKey":"k","seq":2,"text":"x"}`,
		`{"type":"record.upserted","id":"pref-1","text":"Ana prefers trains."}`,
		`{"sessionKey":"k","sessionId":"s","seq":1,"role":"user","text":"I move to Lisbon in May."}`,
		`{"eventId":"e-9","sessionKey":"k","sessionId":"s","seq":3,"text":"Trains, always."}`,
	}, "\n") + "\n"
	var read, acked int64
	problems := map[int]string{}
	var injected []*nats.Msg
	res, err := client.PublishLines(ctx, nc, strings.NewReader(lines), client.LinesConfig{
		Namespace: "agent-7", MaxPending: 2,
		Read:    func(n int64) { read += n },
		Acked:   func(n int64) { acked = n },
		Problem: func(line int, err error) { problems[line] = err.Error() },
		Inject:  func(m *nats.Msg) { injected = append(injected, m) },
	})
	if err != nil {
		t.Fatalf("PublishLines: %v", err)
	}
	if res.Published != 3 || res.Duplicates != 1 || res.Rejected != 2 || res.Failed != 0 || res.LastSeq != 3 {
		t.Errorf("result %+v, want 3 published, 1 duplicate, 2 rejected, last seq 3", res)
	}
	if len(problems) != 2 || !strings.Contains(problems[3], "not a JSON object") || !strings.Contains(problems[4], `namespace "no spaces"`) {
		t.Errorf("problems %v, want lines 3 (not JSON) and 4 (bad namespace)", problems)
	}
	if read != int64(len(lines)) {
		t.Errorf("progress read %d bytes, want %d", read, len(lines))
	}
	if acked != 4 {
		t.Errorf("progress acked %d, want 4", acked)
	}
	if len(injected) != 4 {
		t.Errorf("Inject saw %d messages, want 4 (every line sent)", len(injected))
	}
	stream, err := js.Stream(ctx, memindex.StreamEvents)
	mustTB(t, err)
	wantIDs := map[uint64]string{1: "agent-7/k/s/1", 3: "agent-7/e-9"}
	for seq := uint64(1); seq <= 3; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("stream seq %d: %v", seq, err)
		}
		var ev memindex.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if ev.Namespace != "agent-7" || ev.Type == "" || !strings.HasSuffix(m.Subject, ".agent-7") {
			t.Errorf("seq %d: %s %+v, want a typed event of agent-7 on its (partitioned) subject", seq, m.Subject, ev)
		}
		id := m.Header.Get(nats.MsgIdHdr)
		if want, ok := wantIDs[seq]; ok && id != want {
			t.Errorf("seq %d: Nats-Msg-Id %q, want %q", seq, id, want)
		}
		if seq == 1 {
			if want := client.MsgID(ev, m.Data); id != want {
				t.Errorf("a line's message id %q differs from MsgID's %q for the same event", id, want)
			}
		}
	}
}

// TestPublishLinesGroups: with EventMessages, consecutive valid message
// lines of a session go out as one messages event; a line with an eventId,
// one a worker would refuse, and an event of another type go out alone,
// in their place; the counts are of lines; a second run is all duplicates.
func TestPublishLinesGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := natstest.Connect(t, natstest.Server(t))
	js, err := jetstream.New(nc)
	mustTB(t, err)
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join([]string{
		`{"sessionKey":"a","sessionId":"s","seq":1,"text":"one"}`,
		`{"sessionKey":"a","sessionId":"s","seq":2,"messageId":"m2","text":"two"}`,
		`{"sessionKey":"a","sessionId":"s","seq":3,"text":"three"}`,
		`{"sessionKey":"a","sessionId":"s","seq":4,"text":" "}`, // blank: the worker dead-letters it, alone
		`{"eventId":"e-1","sessionKey":"a","sessionId":"s","seq":5,"text":"named"}`,
		`{"sessionKey":"b","sessionId":"s","seq":1,"text":"b one"}`,
		`{"sessionKey":"b","sessionId":"s","seq":2,"text":"b two"}`,
		`{"type":"record.upserted","id":"r1","text":"a record"}`,
		`{"sessionKey":"b","sessionId":"s","seq":3,"text":"b three"}`,
	}, "\n") + "\n"
	cfg := client.LinesConfig{Namespace: "agent-7", EventMessages: 10}
	res, err := client.PublishLines(ctx, nc, strings.NewReader(lines), cfg)
	if err != nil || res.Published != 9 || res.Duplicates != 0 || res.Rejected != 0 || res.LastSeq != 6 {
		t.Fatalf("PublishLines = %+v, %v; want 9 lines published in 6 events", res, err)
	}
	stream, err := js.Stream(ctx, memindex.StreamEvents)
	mustTB(t, err)
	var got []string
	for seq := uint64(1); seq <= 6; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		mustTB(t, err)
		var ev memindex.Event
		mustTB(t, json.Unmarshal(m.Data, &ev))
		desc := ev.Type + " " + ev.SessionKey
		for _, msg := range ev.Messages {
			desc += fmt.Sprintf(" %d:%s", msg.Seq, msg.ID)
		}
		got = append(got, desc)
		if seq == 1 && m.Header.Get(nats.MsgIdHdr) != client.MsgID(ev, m.Data) {
			t.Errorf("the messages event's Nats-Msg-Id %q, want MsgID's %q", m.Header.Get(nats.MsgIdHdr), client.MsgID(ev, m.Data))
		}
		if seq == 6 { // a group of one line: the line as it goes out ungrouped, and MsgID's id
			alone, err := client.LineMsg([]byte(`{"sessionKey":"b","sessionId":"s","seq":3,"text":"b three"}`), "agent-7", false)
			mustTB(t, err)
			if string(m.Data) != string(alone.Data) || m.Header.Get(nats.MsgIdHdr) != client.MsgID(ev, m.Data) {
				t.Errorf("a group of one line went out as %s (id %q), want %s (id %q)",
					m.Data, m.Header.Get(nats.MsgIdHdr), alone.Data, client.MsgID(ev, m.Data))
			}
		}
	}
	want := []string{"messages a 1: 2:m2 3:", "message a", "message a", "messages b 1: 2:", "record.upserted ", "message b"}
	if !slices.Equal(got, want) {
		t.Errorf("stream events %q, want %q", got, want)
	}
	res, err = client.PublishLines(ctx, nc, strings.NewReader(lines), cfg)
	if err != nil || res.Published != 0 || res.Duplicates != 9 {
		t.Fatalf("second PublishLines = %+v, %v; want 9 duplicate lines", res, err)
	}
}

// TestLineMsgRaw: with raw a line is sent byte for byte, even one that is no
// JSON object, when a namespace is given; without one it is refused.
func TestLineMsgRaw(t *testing.T) {
	m, err := client.LineMsg([]byte(`not json`), "ns1", true)
	if err != nil || string(m.Data) != "not json" || m.Subject != memindex.EventSubject("ns1") || m.Header.Get(nats.MsgIdHdr) != "" {
		t.Fatalf("LineMsg(raw, not JSON) = %+v, %v; want the bytes as they are on ns1's subject", m, err)
	}
	line := `{"seq":1,"text":"x"}`
	m, err = client.LineMsg([]byte(line), "ns1", true)
	if err != nil || string(m.Data) != line {
		t.Fatalf("LineMsg(raw) = %q, %v; want the line unchanged", m.Data, err)
	}
	if _, err := client.LineMsg([]byte(`{"seq":1}`), "", false); err == nil || !strings.Contains(err.Error(), "no namespace") {
		t.Fatalf("LineMsg without a namespace = %v, want a no-namespace error", err)
	}
}

// TestMemoryFileEvents walks a folder: .md files at any depth (any case of
// the extension) become file.upserted events with slash paths and content
// hashes; other files and excluded paths do not.
func TestMemoryFileEvents(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		mustTB(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustTB(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("MEMORY.md", "# Memory\nAna prefers trains.\n")
	write("notes/trip.MD", "Lisbon in May.\n")
	write("notes/todo.txt", "not memory\n")
	write("drafts/wip.md", "excluded\n")
	write("notes/old.md", "excluded too\n")
	evs, err := client.MemoryFileEvents(dir, "/home/ana/proj", []string{"drafts", "notes/old.md"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]memindex.Event{}
	for _, ev := range evs {
		got[ev.Path] = ev
	}
	if len(got) != 2 || got["MEMORY.md"].Content == "" || got["notes/trip.MD"].Content != "Lisbon in May.\n" {
		t.Fatalf("events %+v, want MEMORY.md and notes/trip.MD", evs)
	}
	for _, ev := range evs {
		sum := sha256.Sum256([]byte(ev.Content))
		if ev.Type != memindex.TypeFileUpserted || ev.DirPath != "/home/ana/proj" || ev.ContentHash != hex.EncodeToString(sum[:]) {
			t.Errorf("event %+v: want file.upserted in /home/ana/proj with the content's sha256", ev)
		}
	}
	if _, err := client.MemoryFileEvents(dir, "", []string{"["}); err == nil || !strings.Contains(err.Error(), "bad glob") {
		t.Errorf("MemoryFileEvents with a bad glob = %v, want a bad-glob error", err)
	}
}

// TestPublishLinesUnderTheStreamsIngestLimit: nats-server refuses
// publishes with 429 once a stream's incoming queue is full (here 100 KiB;
// 128 MiB by default). PublishLines keeps its publishes in flight within
// MaxPendingBytes and sends a refused one again after a pause, so every
// line of 40 of 60 KiB is published: with a byte window below the queue,
// and, with a window far above it, by the retries.
func TestPublishLinesUnderTheStreamsIngestLimit(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, `{"type":"record.upserted","id":"r%d","text":"%s"}`+"\n", i, strings.Repeat("x", 60<<10))
	}
	for _, tt := range []struct {
		name   string
		window int
	}{
		{"a window below the queue", 100 << 10},
		{"a window above it: retries", 64 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s := natstest.ServerWith(t, t.TempDir(), func(o *server.Options) { o.StreamMaxBufferedSize = 100 << 10 })
			nc := natstest.Connect(t, s)
			js, err := jetstream.New(nc)
			mustTB(t, err)
			if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 4}); err != nil {
				t.Fatal(err)
			}
			var problems []string
			res, err := client.PublishLines(ctx, nc, strings.NewReader(b.String()), client.LinesConfig{Namespace: "agent-7", MaxPendingBytes: tt.window,
				Problem: func(line int, err error) { problems = append(problems, fmt.Sprintf("line %d: %v", line, err)) }})
			if err != nil || res.Published != 40 || res.Failed != 0 {
				t.Fatalf("PublishLines = %+v, %v; want all 40 published: %v", res, err, problems)
			}
		})
	}
}
