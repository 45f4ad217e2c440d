package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/mcpserver"
	"memindex/node"
)

var toolNames = []string{"memory_add", "memory_forget", "memory_get", "memory_search", "memory_status"}

// TestToolsListed: the SDK's client, over streamable HTTP, lists the five
// tools, each with a description an agent can act on and an input schema
// whose properties are described; memory_search requires its query and
// names the modes and sources it takes.
func TestToolsListed(t *testing.T) {
	n := startWorker(t, nil)
	cs := httpSession(t, newServer(t, connect(t, n.URL()), mcpserver.Config{Namespace: "demo"}), mcpserver.HTTPConfig{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("tool %s: description %q, want one an agent can act on", tool.Name, tool.Description)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if schema["type"] != "object" || len(props) == 0 {
			t.Errorf("tool %s: input schema %v, want an object with properties", tool.Name, tool.InputSchema)
		}
		for name, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); len(d) < 10 {
				t.Errorf("tool %s: property %s has description %q", tool.Name, name, d)
			}
		}
		if tool.OutputSchema == nil {
			t.Errorf("tool %s: no output schema", tool.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, toolNames) {
		t.Fatalf("tools %v, want %v", names, toolNames)
	}
	search := res.Tools[slices.IndexFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == "memory_search" })]
	b, _ := json.Marshal(search.InputSchema)
	for _, want := range []string{`"required":["query"]`, `"enum":["hybrid","keyword","vector"]`, `"enum":["sessions","files","records"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("memory_search input schema %s, want %s", b, want)
		}
	}
}

// TestSearchReturnsTheNATSSearchHits: memory_search over streamable HTTP
// answers with the hits, in the same order and with the same scores, that
// a NATS search (client.Client.Search) returns for the same request on the
// same data, as structured content and as text naming where each hit is.
func TestSearchReturnsTheNATSSearchHits(t *testing.T) {
	n := startWorker(t, nil)
	nc := connect(t, n.URL())
	publishChat(t, nc, "demo")
	cs := httpSession(t, newServer(t, nc, mcpserver.Config{Namespace: "demo"}), mcpserver.HTTPConfig{})
	for _, tc := range []struct {
		name string
		args map[string]any
		req  memindex.SearchRequest
	}{
		{"plain", map[string]any{"query": "harbour"}, memindex.SearchRequest{Query: "harbour"}},
		{"files", map[string]any{"query": "harbour neighbour", "sources": []string{"files"}}, memindex.SearchRequest{Query: "harbour neighbour", Sources: []string{"files"}}},
		{"budget", map[string]any{"query": "Lisbon harbour cello", "budget": 2}, memindex.SearchRequest{Query: "Lisbon harbour cello", Budget: 2}},
		{"session", map[string]any{"query": "cello orchestra", "sessionKey": "chat", "sessionId": "s2", "mode": "keyword"},
			memindex.SearchRequest{Query: "cello orchestra", SessionKey: "chat", SessionID: "s2", Mode: "keyword"}},
		{"around", map[string]any{"query": "umbrella", "around": 1, "sources": []string{"sessions"}},
			memindex.SearchRequest{Query: "umbrella", Around: 1, Sources: []string{"sessions"}}},
		{"before", map[string]any{"query": "harbour", "before": "2026-03-03T00:00:00Z"}, memindex.SearchRequest{Query: "harbour", Before: "2026-03-03T00:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got memindex.SearchResponse
			text := callOK(t, cs, "memory_search", tc.args, &got)
			tc.req.Namespace = "demo"
			want, err := client.NewClient(nc).Search(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Hits) == 0 {
				t.Fatalf("the NATS search found nothing for %+v; the test needs hits", tc.req)
			}
			if !reflect.DeepEqual(roundTrip(t, got.Hits), roundTrip(t, want.Hits)) {
				t.Fatalf("memory_search hits:\n%+v\nwant the NATS search's:\n%+v", got.Hits, want.Hits)
			}
			for _, h := range want.Hits {
				where := "sessionId " + h.SessionID
				if h.Source == memindex.SourceFiles {
					where = fmt.Sprintf("file %s lines %d-%d", h.Path, h.LineStart, h.LineEnd)
				}
				if !strings.Contains(text, where) {
					t.Errorf("text %q does not say where hit %q is (%s)", text, h.Text, where)
				}
				for line := range strings.Lines(h.Text) {
					if !strings.Contains(text, strings.TrimSpace(line)) {
						t.Errorf("text %q does not show line %q of hit %s", text, line, h.ID)
					}
				}
			}
		})
	}
}

// roundTrip is v as JSON decodes it, so values that crossed the wire and
// values that did not compare equal.
func roundTrip(t *testing.T, v []memindex.Hit) []memindex.Hit {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []memindex.Hit
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAddSearchForget: memory_add waits until the worker applied the
// record, so the next memory_search finds it under the id memory_add
// named; a near-duplicate of the same scope updates that record; memory_get
// reads a session; memory_forget removes the record and then a session,
// and the searches after it no longer find them.
func TestAddSearchForget(t *testing.T) {
	n := startWorker(t, nil)
	nc := connect(t, n.URL())
	publishChat(t, nc, "demo")
	cs := httpSession(t, newServer(t, nc, mcpserver.Config{Namespace: "demo"}), mcpserver.HTTPConfig{})

	var added mcpserver.AddOutput
	text := callOK(t, cs, "memory_add", map[string]any{"text": "Ana's favourite tea is genmaicha.", "tags": []string{"preferences"}}, &added)
	if want := mcpserver.RecordID("", "", "Ana's favourite tea is genmaicha."); added.RecordID != want || !added.Applied || added.Merged || added.Namespace != "demo" {
		t.Fatalf("memory_add = %+v (%q), want record %s applied", added, text, want)
	}
	findRecord := func(id string) bool {
		var resp memindex.SearchResponse
		callOK(t, cs, "memory_search", map[string]any{"query": "genmaicha tea", "sources": []string{"records"}}, &resp)
		return slices.ContainsFunc(resp.Hits, func(h memindex.Hit) bool { return h.RecordID == id })
	}
	if !findRecord(added.RecordID) {
		t.Fatalf("memory_search right after memory_add does not find record %s", added.RecordID)
	}
	var again mcpserver.AddOutput
	callOK(t, cs, "memory_add", map[string]any{"text": "Ana's favourite tea is genmaicha!", "tags": []string{"preferences"}}, &again)
	if !again.Merged || again.RecordID != added.RecordID {
		t.Errorf("a near-duplicate memory_add = %+v, want it merged into %s", again, added.RecordID)
	}

	var read memindex.ReadResponse
	callOK(t, cs, "memory_get", map[string]any{"sessionKey": "chat", "sessionId": "s1", "from": 2, "count": 2}, &read)
	if len(read.Messages) != 2 || read.Messages[0].Seq != 2 || !strings.Contains(read.Messages[1].Text, "umbrella") || !read.More {
		t.Fatalf("memory_get s1 from 2 = %+v, want seqs 2-3 and more", read)
	}

	text = callOK(t, cs, "memory_get", map[string]any{"path": "notes/lisbon.md", "from": 3, "count": 2}, &read)
	if len(read.Lines) != 2 || !strings.Contains(read.Lines[1], "Rui") || !strings.Contains(text, "    4  Keys are with the neighbour") {
		t.Fatalf("memory_get of notes/lisbon.md lines 3-4 = %+v (%q)", read, text)
	}

	var forgot mcpserver.ForgetOutput
	callOK(t, cs, "memory_forget", map[string]any{"recordId": added.RecordID}, &forgot)
	if !forgot.Applied || forgot.Forgot != "record" {
		t.Fatalf("memory_forget = %+v, want the record removed and applied", forgot)
	}
	if findRecord(added.RecordID) {
		t.Fatalf("memory_search after memory_forget still finds record %s", added.RecordID)
	}

	callOK(t, cs, "memory_forget", map[string]any{"sessionKey": "chat", "sessionId": "s1"}, &forgot)
	if !forgot.Applied || forgot.Forgot != "session" {
		t.Fatalf("memory_forget of a session = %+v", forgot)
	}
	var resp memindex.SearchResponse
	callOK(t, cs, "memory_search", map[string]any{"query": "umbrella Lisbon harbour"}, &resp)
	for _, h := range resp.Hits {
		if h.SessionID == "s1" {
			t.Fatalf("memory_search after forgetting session s1 still finds %+v", h)
		}
	}
	var st mcpserver.StatusOutput
	text = callOK(t, cs, "memory_status", nil, &st)
	if st.Health != memindex.HealthOK || len(st.Holders) != 1 || st.Holders[0].Status.Messages != 3 || st.Partition != memindex.Partition("demo", 2) {
		t.Fatalf("memory_status = %+v (%q), want one healthy holder with s2's 3 messages", st, text)
	}
}

// TestToolErrors: what goes wrong comes back as a tool error (isError)
// with the reason: a namespace the server does not allow, an argument the
// worker refuses (its 400 names the field), a file that is not there (404),
// a namespace over its search rate (429 with Retry-After), no worker
// serving, NATS unreachable. An allowed namespace works.
func TestToolErrors(t *testing.T) {
	n := startWorker(t, func(c *node.Config) { c.RatePerNamespace, c.Limits.MaxTextBytes = 0.2, 200 })
	nc := connect(t, n.URL())
	cs := httpSession(t, newServer(t, nc, mcpserver.Config{Namespace: "demo", AllowNamespaces: []string{"other", "third"}}), mcpserver.HTTPConfig{})

	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       []string
	}{
		{"namespace not allowed", "memory_search", map[string]any{"query": "x", "namespace": "secret"}, []string{"namespace not allowed", `"secret"`, "demo, other, third"}},
		{"worker refuses a field", "memory_search", map[string]any{"query": "x", "namespace": "other", "after": "yesterday"}, []string{"memindex 400 invalid argument", "field after"}},
		{"schema refuses a mode", "memory_search", map[string]any{"query": "x", "mode": "fuzzy"}, []string{"mode"}},
		{"missing file", "memory_get", map[string]any{"path": "notes/none.md"}, []string{"memindex 404 not found"}},
		{"get without a session", "memory_get", map[string]any{"sessionKey": "chat"}, []string{"invalid argument", "sessionId"}},
		{"forget nothing", "memory_forget", map[string]any{}, []string{"invalid argument", "recordId"}},
		{"blank record", "memory_add", map[string]any{"text": "  "}, []string{"invalid argument", "field text"}},
		{"blank tag", "memory_add", map[string]any{"text": "x", "tags": []string{"ok", " "}}, []string{"invalid argument", "field tags"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := callErr(t, cs, tc.tool, tc.args)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s(%v): tool error %q, want it to say %q", tc.tool, tc.args, text, w)
				}
			}
		})
	}

	// The allowed namespace answers; searching "other" again at once is
	// over its rate (0.2/s): 429 with when to retry.
	var resp memindex.SearchResponse
	callOK(t, cs, "memory_search", map[string]any{"query": "anything", "namespace": "other"}, &resp)
	if resp.Namespace != "other" {
		t.Fatalf("search of an allowed namespace answered for %q", resp.Namespace)
	}
	var limited string
	for range 10 {
		res := call(t, cs, "memory_search", map[string]any{"query": "anything", "namespace": "other"})
		if res.IsError {
			limited = textOf(res)
			break
		}
	}
	if !strings.Contains(limited, "memindex 429 overloaded") || !strings.Contains(limited, "retry after") {
		t.Fatalf("searches over the rate: tool error %q, want a 429 saying when to retry", limited)
	}
	// memory_add in that namespace: its check search is refused too, which
	// says nothing about the record: it is applied all the same.
	var rated mcpserver.AddOutput
	callOK(t, cs, "memory_add", map[string]any{"text": "A short fact.", "namespace": "other"}, &rated)
	if !rated.Applied {
		t.Errorf("memory_add while the namespace is over its search rate = %+v, want applied", rated)
	}

	// A record the worker refuses (over its --max-text-bytes, within the
	// client's default) is published but never searchable: not applied,
	// and the note says where to look. (In a namespace not yet searched:
	// the check is a search, and demo's read above used its rate.)
	var refused mcpserver.AddOutput
	callOK(t, cs, "memory_add", map[string]any{"text": strings.Repeat("too long a fact ", 20), "namespace": "third"}, &refused)
	if refused.Applied || !strings.Contains(refused.Note, "memindex dlq list") {
		t.Errorf("memory_add of a record the worker refuses = %+v, want not applied and a note naming the DLQ", refused)
	}

	// No worker behind the NATS server; then no NATS server at all.
	bare := httpSession(t, newServer(t, connect(t, bareNATS(t)), mcpserver.Config{Namespace: "demo"}), mcpserver.HTTPConfig{})
	for tool, args := range map[string]map[string]any{"memory_search": {"query": "x"}, "memory_add": {"text": "x"}} {
		if text := callErr(t, bare, tool, args); !strings.Contains(text, "no memindex worker is serving") {
			t.Errorf("%s with no worker: %q, want it to say no worker is serving", tool, text)
		}
	}
	down, err := nats.Connect("nats://127.0.0.1:1", nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	unreachable := httpSession(t, newServer(t, down, mcpserver.Config{Namespace: "demo"}), mcpserver.HTTPConfig{})
	if text := callErr(t, unreachable, "memory_status", nil); !strings.Contains(text, "not connected to NATS") {
		t.Errorf("memory_status with NATS down: %q, want it to say NATS is not connected", text)
	}
}

// TestHTTPBearerToken: with a token set, a request without it gets 401
// and the SDK's client with it works.
func TestHTTPBearerToken(t *testing.T) {
	n := startWorker(t, nil)
	s := newServer(t, connect(t, n.URL()), mcpserver.Config{Namespace: "demo"})
	ts := httptest.NewServer(s.Handler(mcpserver.HTTPConfig{Token: "s3cret"}))
	t.Cleanup(ts.Close)
	resp, err := http.Post(ts.URL+mcpserver.DefaultHTTPPath, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("request without the token: %s, want 401", resp.Status)
	}
	hc := &http.Client{Transport: bearer{"s3cret"}, Timeout: 30 * time.Second}
	cs := clientSession(t, &mcp.StreamableClientTransport{Endpoint: ts.URL + mcpserver.DefaultHTTPPath, HTTPClient: hc, MaxRetries: -1})
	var st mcpserver.StatusOutput
	callOK(t, cs, "memory_status", nil, &st)
	if st.Workers != 1 {
		t.Fatalf("memory_status with the token: %+v", st)
	}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestConfig: ParseNamespaces and Validate refuse what cannot work, naming it.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"a, b-2 ,c_3", []string{"a", "b-2", "c_3"}, ""},
		{"*", []string{"*"}, ""},
		{"a,*", nil, "give it alone"},
		{"a,b c", nil, `"b c"`},
	} {
		got, err := mcpserver.ParseNamespaces(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || (err == nil && !slices.Equal(got, tc.want)) {
			t.Errorf("ParseNamespaces(%q) = %v, %v; want %v, error containing %q", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		cfg  mcpserver.Config
		want string
	}{
		{mcpserver.Config{}, "a namespace is required"},
		{mcpserver.Config{Namespace: "a b"}, `namespace "a b"`},
		{mcpserver.Config{AllowNamespaces: []string{"*"}}, ""},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v.Validate() = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// TestUnheldPartitionIs503: a namespace whose partition no worker holds
// gets the worker's 503 as a tool error that says to retry, and
// memory_status says no worker holds it.
func TestUnheldPartitionIs503(t *testing.T) {
	n := startWorker(t, func(c *node.Config) { c.Partitions = "0" })
	ns := "unheld"
	for i := 0; memindex.Partition(ns, 2) != 1; i++ {
		ns = fmt.Sprintf("unheld-%d", i)
	}
	cs := httpSession(t, newServer(t, connect(t, n.URL()), mcpserver.Config{Namespace: ns}), mcpserver.HTTPConfig{})
	if text := callErr(t, cs, "memory_search", map[string]any{"query": "x"}); !strings.Contains(text, "memindex 503 unavailable") || !strings.Contains(text, "retry") {
		t.Errorf("memory_search of an unheld partition: %q, want a 503 saying to retry", text)
	}
	var st mcpserver.StatusOutput
	callOK(t, cs, "memory_status", nil, &st)
	if st.Health != memindex.HealthDown || len(st.Holders) != 0 || len(st.Problems) == 0 || !strings.Contains(st.Problems[0], "no worker holds partition 1") {
		t.Errorf("memory_status of an unheld partition = %+v, want down and why", st)
	}
}

// TestAnyNamespace: with --allow-namespaces '*' and no --namespace, a call
// must name its namespace, and may name any.
func TestAnyNamespace(t *testing.T) {
	n := startWorker(t, nil)
	nc := connect(t, n.URL())
	publishChat(t, nc, "team-a")
	cs := httpSession(t, newServer(t, nc, mcpserver.Config{AllowNamespaces: []string{mcpserver.AllNamespaces}}), mcpserver.HTTPConfig{})
	if text := callErr(t, cs, "memory_search", map[string]any{"query": "harbour"}); !strings.Contains(text, "namespace required") || !strings.Contains(text, "any namespace") {
		t.Errorf("memory_search naming no namespace: %q, want it to say one is required", text)
	}
	var resp memindex.SearchResponse
	callOK(t, cs, "memory_search", map[string]any{"query": "harbour", "namespace": "team-a"}, &resp)
	if resp.Namespace != "team-a" || len(resp.Hits) == 0 {
		t.Errorf("memory_search of team-a = %d hits in %q, want team-a's", len(resp.Hits), resp.Namespace)
	}
	if text := callErr(t, cs, "memory_search", map[string]any{"query": "harbour", "namespace": "bad ns"}); !strings.Contains(text, "field namespace") {
		t.Errorf("memory_search of an invalid namespace: %q, want the field named", text)
	}
}
