package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"memindex"
	"memindex/consumer"
	"memindex/query"
)

// TestPublishTraceReachesTheWorker runs `memindex publish` under a
// TRACEPARENT, as a traced script would, into a worker that traces: the
// worker's process spans are children of that span, and a search that
// carries a traceparent (spelled in any case) gets a child span too.
// (The publish's two lines are one messages event, so one process span.)
func TestPublishTraceReachesTheWorker(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg := testServeConfig(t.TempDir())
	cfg.TracerProvider = tp
	n, _ := runTestNode(t, cfg, nil)

	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab, 1}, SpanID: trace.SpanID{0xcd, 2}, TraceFlags: trace.FlagsSampled})
	t.Setenv("TRACEPARENT", fmt.Sprintf("00-%s-%s-01", parent.TraceID(), parent.SpanID()))
	in := strings.NewReader(`{"sessionKey":"chat","sessionId":"s1","seq":1,"text":"We move to Lisbon in May."}
{"sessionKey":"chat","sessionId":"s1","seq":2,"text":"The harbour is lovely."}
`)
	var out, errOut bytes.Buffer
	if err := runPublish(context.Background(), []string{"--server", n.URL(), "--namespace", "traced", "-"}, in, &out, &errOut); err != nil {
		t.Fatalf("publish: %v\n%s", err, errOut.String())
	}
	children := func(name string, of trace.SpanContext) int {
		c := 0
		for _, s := range exp.GetSpans() {
			if s.Name == name && s.Parent.SpanID() == of.SpanID() && s.SpanContext.TraceID() == of.TraceID() {
				c++
			}
		}
		return c
	}
	// The two lines go out as one messages event: one process span.
	waitUntil(t, 20*time.Second, "a process span below the publisher's", func() bool { return children(consumer.SpanProcess, parent) == 1 })

	asker := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xef, 3}, SpanID: trace.SpanID{0x12, 4}, TraceFlags: trace.FlagsSampled})
	m := nats.NewMsg(memindex.SearchSubject("traced"))
	m.Data = []byte(`{"query":"Lisbon harbour"}`)
	m.Header.Set("TraceParent", fmt.Sprintf("00-%s-%s-01", asker.TraceID(), asker.SpanID()))
	if _, err := n.Conn().RequestMsg(m, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the search span below the asker's", func() bool { return children(query.SpanSearch, asker) == 1 })
}

// TestPublishExportsOTLP runs `memindex publish` with tracing on, exporting
// to an OTLP/HTTP collector played by an httptest server: the collector
// receives the send span, a child of TRACEPARENT, named service memindex,
// and each event carries that span's context in a lowercase traceparent.
func TestPublishExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector got %s %s (%s), want POST /v1/traces in protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: bad protobuf: %v", err)
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	t.Setenv("TRACEPARENT", "00-"+traceID+"-"+spanID+"-01")

	n := testNode(t, 1)
	in := strings.NewReader(`{"sessionKey":"chat","sessionId":"s1","seq":1,"text":"hello"}` + "\n")
	var out, errOut bytes.Buffer
	if err := runPublish(context.Background(), []string{"--server", n.URL(), "--namespace", "otlp", "-"}, in, &out, &errOut); err != nil {
		t.Fatalf("publish: %v\n%s", err, errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	var sendID string
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.Name == "send memindex.events" && hex.EncodeToString(s.TraceId) == traceID && hex.EncodeToString(s.ParentSpanId) == spanID {
						if service != "memindex" {
							t.Errorf("send span's service.name = %q, want memindex", service)
						}
						sendID = hex.EncodeToString(s.SpanId)
					}
				}
			}
		}
	}
	if sendID == "" {
		t.Fatalf("the collector got no send span below %s (%d requests)", spanID, len(got))
	}
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetMsg(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "00-" + traceID + "-" + sendID + "-01"; msg.Header.Get("traceparent") != want {
		t.Fatalf("event header traceparent = %q (headers %v), want %q", msg.Header.Get("traceparent"), msg.Header, want)
	}
}
