package schemas_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"memindex"
	"memindex/internal/harness"
)

// workerEvents are events of every type for namespace agent-7, as
// `memindex publish` lines.
var workerEvents = []string{
	`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":1,"id":"m1","role":"user","speaker":"Ana","text":"We move to Lisbon in May.","timestamp":"2026-11-30T09:12:00Z"}`,
	`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":2,"id":"m2","role":"assistant","speaker":"Bot","text":"Lisbon in May sounds lovely. Where will you live?","timestamp":"2026-11-30T09:13:00Z"}`,
	`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":3,"id":"m3","role":"user","speaker":"Ana","text":"Near the river, in Alfama.","timestamp":"2026-11-30T09:14:00Z"}`,
	`{"type":"message","sessionKey":"chat","sessionId":"s2","seq":1,"speaker":"Ana","text":"This session goes away.","imageCaption":"a photo of boxes"}`,
	`{"type":"session.deleted","sessionKey":"chat","sessionId":"s2"}`,
	`{"type":"file.upserted","path":"notes/MEMORY.md","dirPath":"","content":"# Preferences\nAna drinks tea, never coffee.\n\n# Move\nLisbon, May.\n"}`,
	`{"type":"file.upserted","path":"notes/old.md","content":"# Old\nGone soon.\n"}`,
	`{"type":"file.deleted","path":"notes/old.md"}`,
	`{"type":"record.upserted","id":"r1","text":"Ana prefers green tea","tags":["prefs"]}`,
	`{"type":"record.upserted","id":"r2","text":"Temporary record"}`,
	`{"type":"record.deleted","id":"r2"}`,
}

// TestWorkerAgrees starts a real worker (embedded NATS with JetStream,
// SQLite shards in a temporary directory), indexes events of every type
// and checks that:
//   - every reply it gives (searches of each kind, reads of a session and
//     of a file, status, health, 400/404/413 errors) is valid to its
//     schema, an error reply's body carrying its header's code;
//   - it accepts exactly the search and read requests the schemas accept
//     (the cases of TestRequestsAgreeWithGo), so the Go model of the
//     service those tests use is the service.
func TestWorkerAgrees(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, stop, err := harness.Nodes.Start(ctx, harness.NodeSpec{Dir: t.TempDir(), Worker: "schemas-test", Partitions: 2, ContextMessages: 2})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	lines := make([][]byte, len(workerEvents))
	for i, e := range workerEvents {
		if err := validate(schemaAt(t, "event"), []byte(e)); err != nil {
			t.Fatalf("event %d is not valid to the schema: %v", i, err)
		}
		lines[i] = []byte(e)
	}
	if _, err := harness.Nodes.Ingest(ctx, n, lines, "agent-7"); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	ask := func(t *testing.T, subject, body string) *nats.Msg {
		t.Helper()
		m, err := nc.RequestWithContext(ctx, subject, []byte(body))
		if err != nil {
			t.Fatalf("request %s %s: %v", subject, body, err)
		}
		return m
	}
	search, read := memindex.SearchSubject("agent-7"), memindex.ReadSubject("agent-7")

	replies := []struct {
		name, subject, body string
		loc                 string // the reply's schema; "error" for an error reply
		code                string // the error code expected
		check               func(t *testing.T, data string)
	}{
		{"search", search, `{"query":"where is Ana moving?"}`, "search-response", "", hasAll(`"hits":[{`, `"source":"sessions"`)},
		{"search with explain, around, budget", search, `{"query":"Lisbon","explain":true,"around":1,"budget":2,"mode":"hybrid"}`, "search-response", "", hasAll(`"explain":[`, `"context":[{`, `"scores":{`)},
		{"search of files and records", search, `{"query":"tea","sources":["files","records"],"k":5}`, "search-response", "", hasAll(`"source":"files"`, `"source":"records"`, `"lineStart"`)},
		{"keyword search, nothing found", search, `{"query":"zebra quantum xylophone","mode":"keyword"}`, "search-response", "", hasAll(`"hits":[]`)},
		{"search of an empty namespace", memindex.SearchSubject("nobody-here"), `{"query":"anything"}`, "search-response", "", nil},
		{"read a session", read, `{"sessionKey":"chat","sessionId":"s1","from":2}`, "read-response", "", hasAll(`"seq":2`, `"seq":3`)},
		{"read a file", read, `{"path":"notes/MEMORY.md","count":3}`, "read-response", "", hasAll(`"lines":["# Preferences"`)},
		{"read a deleted file", read, `{"path":"notes/old.md"}`, "error", memindex.CodeNotFound, nil},
		{"bad search", search, `{"query":"q","k":500}`, "error", memindex.CodeBadRequest, hasAll(`{"code":"400","error":"invalid search request: field k: must be between 1 and 200, got 500"}`)},
		{"search not JSON", search, `{"query":`, "error", memindex.CodeBadRequest, nil},
		{"query too large", search, `{"query":"` + strings.Repeat("q", memindex.MaxQueryBytes+1) + `"}`, "error", memindex.CodeTooLarge, nil},
		{"bad read", read, `{"sessionKey":"chat"}`, "error", memindex.CodeBadRequest, hasAll(`field sessionId`)},
		{"status", memindex.StatusSubject, ``, "status-response", "", hasAll(`"partitions":[{`)},
		{"health", memindex.HealthSubject, ``, "health-response", "", nil},
	}
	for _, r := range replies {
		t.Run(r.name, func(t *testing.T) {
			m := ask(t, r.subject, r.body)
			code := m.Header.Get(micro.ErrorCodeHeader)
			if code != r.code {
				t.Fatalf("reply code %q (%s), want %q", code, m.Data, r.code)
			}
			if err := validate(schemaAt(t, r.loc), m.Data); err != nil {
				t.Fatalf("reply %s is not a valid %s: %v", m.Data, r.loc, err)
			}
			if code != "" && !strings.Contains(string(m.Data), fmt.Sprintf(`"code":%q`, code)) {
				t.Errorf("error body %s does not carry the header's code %s", m.Data, code)
			}
			if r.check != nil {
				r.check(t, string(m.Data))
			}
		})
	}

	worker := func(t *testing.T, subject string, c agreeCase) error {
		m := ask(t, subject, c.json)
		switch code := m.Header.Get(micro.ErrorCodeHeader); code {
		case "", memindex.CodeNotFound: // answered, or a valid read of nothing
			return nil
		case memindex.CodeBadRequest, memindex.CodeTooLarge:
			return fmt.Errorf("%s: %s", code, m.Data)
		default:
			t.Fatalf("%q: reply code %s: %s", c.name, code, m.Data)
			return nil
		}
	}
	for _, set := range []struct {
		loc, subject string
		cases        []agreeCase
	}{{"search-request", search, searchCases}, {"read-request", read, readCases}} {
		for _, c := range set.cases {
			judge(t, set.loc, "agent-7", func([]byte) error { return worker(t, set.subject, c) }, c)
		}
	}
}

// hasAll checks that a reply holds each of parts.
func hasAll(parts ...string) func(t *testing.T, data string) {
	return func(t *testing.T, data string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(data, p) {
				t.Errorf("reply %s does not hold %s", data, p)
			}
		}
	}
}
