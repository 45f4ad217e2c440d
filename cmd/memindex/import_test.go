package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/client"
	"memindex/importer"
)

const (
	importSample    = "../../importer/testdata/openclaw/agents/main/sessions"
	importSampleKey = "agent:main:whatsapp:direct:+4915112345678"
	importSampleID  = "4f1c2a9e-7b3d-4e8a-9c61-2d5b8e0f3a17"
)

// TestImportOpenClawTwice imports the sample OpenClaw transcript into a
// real worker: exactly its six messages are indexed (status, read,
// search); a second import stores nothing (every message a duplicate), and
// the same events sent again past the stream's de-duplication (no
// Nats-Msg-Id) change nothing either: the worker upserts the same
// (session, seq) with the same text.
func TestImportOpenClawTwice(t *testing.T) {
	n := testNode(t, 4)
	ctx := context.Background()
	srv := []string{"--server", n.URL()}
	imp := func() importer.Summary {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := runImport(ctx, append(srv, "--namespace", "demo", "--json", importSample), nil, &out, &errOut); err != nil {
			t.Fatalf("import: %v\nstderr: %s", err, errOut.String())
		}
		var sum importer.Summary
		if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
			t.Fatalf("import --json printed %q: %v", out.String(), err)
		}
		return sum
	}
	status := func() memindex.PartitionStatus {
		var b bytes.Buffer
		var sts []memindex.StatusResponse
		if err := runStatus(ctx, append(srv, "--json", "--wait", "200ms"), &b); err != nil || json.Unmarshal(b.Bytes(), &sts) != nil || len(sts) != 1 {
			return memindex.PartitionStatus{Messages: -1}
		}
		return sts[0].Total()
	}

	first := imp()
	if first.Messages != 6 || first.Published != 6 || first.Duplicates != 0 || first.Sessions != 1 || first.Files != 1 || first.Skipped["message:toolResult"] != 1 {
		t.Fatalf("first import: %+v; want 6 messages published from 1 file, 1 session, a tool result skipped", first)
	}
	waitUntil(t, 20*time.Second, "status to show the 6 imported messages", func() bool { return status().Messages == 6 })
	chunks := status().Chunks

	var b bytes.Buffer
	if err := runRead(ctx, append(srv, "--namespace", "demo", "--session", importSampleKey, "--session-id", importSampleID, "--json"), &b); err != nil {
		t.Fatal(err)
	}
	var rd memindex.ReadResponse
	if err := json.Unmarshal(b.Bytes(), &rd); err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{"d4e5f607", "e5f60718", "f6071829", "293a4b5c", "5c6d7e8f", "6d7e8f90"}
	if len(rd.Messages) != len(wantIDs) {
		t.Fatalf("read gave %d messages, want %d: %+v", len(rd.Messages), len(wantIDs), rd.Messages)
	}
	for i, m := range rd.Messages {
		if m.Seq != int64(i+1) || m.ID != wantIDs[i] || strings.Contains(m.Text, "148-152 cm") || strings.Contains(m.Text, "HEARTBEAT") {
			t.Errorf("read message %d = %+v, want seq %d id %s and no tool or custom text", i, m, i+1, wantIDs[i])
		}
	}
	if rd.Messages[5].Text != "Noted: movers on May 12.\nMiso flies on May 14; I will remind you a week before each date." || rd.Messages[4].Role != "user" {
		t.Errorf("read messages 5-6 = %+v", rd.Messages[4:])
	}
	b.Reset()
	if err := runSearch(ctx, append(srv, "--namespace", "demo", "--json", "-k", "3", "does", "the", "piano", "fit?"), &b); err != nil {
		t.Fatal(err)
	}
	var resp memindex.SearchResponse
	if err := json.Unmarshal(b.Bytes(), &resp); err != nil || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Text, "piano") {
		t.Fatalf("search = %s (%v), want a hit about the piano", b.String(), err)
	}

	second := imp()
	if second.Messages != 6 || second.Published != 0 || second.Duplicates != 6 {
		t.Fatalf("second import: %+v; want the 6 messages all duplicates", second)
	}
	// The same events past the de-duplication window: sent with no
	// Nats-Msg-Id, the stream stores them again and the worker applies them.
	var events bytes.Buffer
	var errOut bytes.Buffer
	if err := runImport(ctx, []string{"--namespace", "demo", "--dry-run", importSample}, nil, &events, &errOut); err != nil {
		t.Fatalf("dry run: %v\n%s", err, errOut.String())
	}
	js := jsOf(t, n)
	for line := range strings.Lines(events.String()) {
		if _, err := js.Publish(ctx, memindex.EventSubject("demo"), []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// A marker after them in the same partition: once it is indexed, so
	// is everything before it.
	if _, err := client.NewClient(n.Conn()).Publish(ctx, memindex.Event{Namespace: "demo", SessionKey: "marker", SessionID: "m", Seq: 1, Text: "marker"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the marker to be indexed", func() bool { return status().Messages >= 7 })
	if st := status(); st.Messages != 7 || st.Sessions != 2 || st.Chunks != chunks+1 {
		t.Fatalf("after importing again: %d messages, %d sessions, %d chunks; want 7, 2, %d (the 6 imported once, the marker)", st.Messages, st.Sessions, st.Chunks, chunks+1)
	}
}

// TestImportBadInput: a mapping error and a missing namespace fail before
// anything is sent; bad lines of a generic JSONL file are named on stderr,
// the good ones are imported, and the command fails.
func TestImportBadInput(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := runImport(ctx, []string{"--namespace", "demo", "--dry-run", "--map", "body=.x", "-"}, strings.NewReader(""), &out, &errOut); err == nil || !strings.Contains(err.Error(), `unknown field "body"`) {
		t.Fatalf("bad --map: err %v, want unknown field", err)
	}
	if err := runImport(ctx, []string{"--dry-run", "-"}, strings.NewReader(""), &out, &errOut); err == nil || !strings.Contains(err.Error(), "--namespace is required") {
		t.Fatalf("no namespace: err %v", err)
	}
	in := `{"conv":"c1","who":"user","msg":"hello"}
{"conv":"c1","who":"user"}
{"conv":"c1","who":"wizard","msg":"hm"}
{"conv":"c1","who":"assistant","msg":"hi, Ana"}
`
	out.Reset()
	errOut.Reset()
	err := runImport(ctx, []string{"--namespace", "demo", "--dry-run", "--json", "--map", `sessionKey="chat",sessionId=.conv,role=.who,text=.msg`, "-"}, strings.NewReader(in), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "2 bad lines") {
		t.Fatalf("bad lines: err %v, want 2 bad lines", err)
	}
	if !strings.Contains(errOut.String(), "-:2: text: .msg is missing") || !strings.Contains(errOut.String(), `-:3: role: .who is "wizard"`) {
		t.Fatalf("stderr %q, want lines 2 and 3 named with their reasons", errOut.String())
	}
	var evs []memindex.Event
	for line := range strings.Lines(out.String()) {
		ev, err := memindex.DecodeEvent([]byte(line))
		if err != nil {
			t.Fatalf("dry run printed %q: %v", line, err)
		}
		if ev.Type != memindex.TypeMessages {
			t.Fatalf("dry run printed %q, want a messages event: the good lines are of one session", line)
		}
		for _, m := range ev.Messages {
			evs = append(evs, ev.Message(m))
		}
	}
	if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 || evs[1].Text != "hi, Ana" || evs[1].SessionKey != "chat" {
		t.Fatalf("dry run messages %+v, want the 2 good lines as seq 1 and 2 in one event", evs)
	}
}
