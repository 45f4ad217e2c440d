package query

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"memindex"
	"memindex/client"
)

// recorded collects what a service reports to its Metrics.
type recorded struct {
	mu       sync.Mutex
	searched []*memindex.SearchResponse
	took     []time.Duration
	rejected []string // endpoint/reason
}

func (r *recorded) metrics() Metrics {
	return MetricsFuncs{
		SearchedFunc: func(resp *memindex.SearchResponse, took time.Duration, _ error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.searched, r.took = append(r.searched, resp), append(r.took, took)
		},
		RejectedFunc: func(endpoint, reason string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.rejected = append(r.rejected, endpoint+"/"+reason)
		},
	}
}

func (r *recorded) snapshot() ([]*memindex.SearchResponse, []time.Duration, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.searched), slices.Clone(r.took), slices.Clone(r.rejected)
}

// TestServiceMetrics checks that each search that ran is reported once with
// its legs' times, and each refused request with its reason.
func TestServiceMetrics(t *testing.T) {
	var rec recorded
	nc, _ := setup(t, ServiceConfig{Metrics: rec.metrics()}, newTestShard())
	c := client.NewClient(nc)
	for range 3 {
		if _, err := c.Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon"}); err != nil {
			t.Fatalf("Client.Search() error %v", err)
		}
	}
	if _, err := nc.Request(memindex.SearchSubject("agent-7"), []byte(`{"query":`), 5*time.Second); err != nil {
		t.Fatalf("bad search request: %v", err)
	}
	if _, err := nc.Request(memindex.ReadSubjectPrefix+".agent-7", []byte(`nope`), 5*time.Second); err != nil {
		t.Fatalf("bad read request: %v", err)
	}
	searched, took, rejected := rec.snapshot()
	if len(searched) != 3 {
		t.Fatalf("Searched reported %d times, want 3", len(searched))
	}
	for i, resp := range searched {
		if resp == nil || !resp.Legs.Vector.Ran || !resp.Legs.Keyword.Ran || took[i] <= 0 {
			t.Fatalf("search %d reported %+v after %v, want a response with both legs and a duration", i, resp, took[i])
		}
	}
	if want := []string{"search/bad_request", "read/bad_request"}; !slices.Equal(rejected, want) {
		t.Fatalf("Rejected reported %v, want %v", rejected, want)
	}
}

// TestServiceSearchSpan sends searches whose traceparent header is spelled
// in two cases and finds the service's search span as a child of the
// requester's span, with the legs' times; a refused search's span is an
// error.
func TestServiceSearchSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	nc, _ := setup(t, ServiceConfig{TracerProvider: tp}, newTestShard())
	requester := tp.Tracer("test client")
	var parents []trace.SpanContext
	for _, key := range []string{"traceparent", "TraceParent", "TRACEPARENT"} {
		_, span := requester.Start(context.Background(), "ask")
		sc := span.SpanContext()
		span.End()
		body := []byte(`{"query":"Ana moving Lisbon"}`)
		if key == "TRACEPARENT" {
			body = []byte(`{"query":"Ana","k":-1}`) // refused: k must be positive
		}
		m := nats.NewMsg(memindex.SearchSubject("agent-7"))
		m.Data = body
		m.Header.Set(key, fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()))
		if _, err := nc.RequestMsg(m, 5*time.Second); err != nil {
			t.Fatalf("search with %s: %v", key, err)
		}
		parents = append(parents, sc)
	}
	var spans []tracetest.SpanStub
	deadline := time.Now().Add(10 * time.Second)
	for len(spans) < 3 && time.Now().Before(deadline) { // the reply goes out just before the span ends
		spans = nil
		for _, s := range exp.GetSpans() {
			if s.Name == SpanSearch {
				spans = append(spans, s)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(spans) != 3 {
		t.Fatalf("got %d search spans, want 3", len(spans))
	}
	for i, sc := range parents {
		idx := slices.IndexFunc(spans, func(s tracetest.SpanStub) bool { return s.Parent.SpanID() == sc.SpanID() })
		if idx < 0 {
			t.Fatalf("request %d: no search span is a child of the requester's span %s", i, sc.SpanID())
		}
		s := spans[idx]
		if s.SpanContext.TraceID() != sc.TraceID() || s.SpanKind != trace.SpanKindServer {
			t.Errorf("request %d: span in trace %s kind %v, want trace %s kind server", i, s.SpanContext.TraceID(), s.SpanKind, sc.TraceID())
		}
		attrs := attribute.NewSet(s.Attributes...)
		if i == 2 {
			if code, _ := attrs.Value(attrErrorCode); s.Status.Code != codes.Error || code.AsString() != memindex.CodeBadRequest {
				t.Errorf("refused search: status %v, error code %q; want an error with code 400", s.Status, code.AsString())
			}
			continue
		}
		for _, k := range []attribute.Key{attrVectorMs, attrKeywordMs, attrVectorAnswered, attrKeywordAnswered, attrHits} {
			if !attrs.HasValue(k) {
				t.Errorf("request %d: search span lacks %s (has %v)", i, k, s.Attributes)
			}
		}
		if v, _ := attrs.Value(attrKeywordAnswered); !v.AsBool() {
			t.Errorf("request %d: keyword leg not answered in the span", i)
		}
	}
}
