package telemetry

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestTracingEnabled(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    bool
		wantErr string
	}{
		{"nothing set: off", nil, false, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
		{"grpc protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"http/protobuf", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Enabled(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Enabled() error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Enabled() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	tp, shutdown, err := NewTracerProvider(context.Background(), func(string) string { return "" }, "test")
	if tp != nil || err != nil || shutdown(context.Background()) != nil {
		t.Fatalf("NewTracerProvider() with no variables = %v, %v; want a nil provider (off)", tp, err)
	}
}

// TestLogsCarryTheTraceID: a record logged with a span in its context has
// trace_id and span_id, through WithAttrs and WithGroup too; one without has
// neither.
func TestLogsCarryTheTraceID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(WithTraceIDs(slog.NewJSONHandler(&buf, nil))).With("partition", 3)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	log.InfoContext(ctx, "with span", "stream_seq", 7)
	log.WithGroup("g").InfoContext(ctx, "grouped")
	log.Info("without span")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d log lines, want 3:\n%s", len(lines), buf.String())
	}
	for i, want := range []bool{true, true, false} {
		has := strings.Contains(lines[i], sc.TraceID().String()) && strings.Contains(lines[i], sc.SpanID().String())
		if has != want {
			t.Errorf("line %d %s: has trace ids %v, want %v", i, lines[i], has, want)
		}
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec[LogKeyTraceID] != sc.TraceID().String() || rec["partition"] != float64(3) {
		t.Errorf("first line %s: want trace_id %s and partition 3", lines[0], sc.TraceID())
	}
}

// collector is an OTLP/HTTP trace receiver played by an httptest server,
// answering as a collector does; OTEL_EXPORTER_OTLP_ENDPOINT points at it.
type collector struct {
	mu    sync.Mutex
	spans []exported
}

// exported is one span the collector received, with its resource's
// service name and version.
type exported struct {
	service, version string
	span             *tracepb.Span
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector got %s %s (%s), want POST /v1/traces in protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: bad protobuf: %v", err)
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			var e exported
			for _, kv := range rs.Resource.GetAttributes() {
				switch kv.Key {
				case "service.name":
					e.service = kv.Value.GetStringValue()
				case "service.version":
					e.version = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					e.span = s
					c.spans = append(c.spans, e)
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	return c
}

func (c *collector) received() []exported {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]exported(nil), c.spans...)
}

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
)

// TestStartPublishExportsTheSendSpan: with an OTLP endpoint set, the send
// span is a child of TRACEPARENT, reaches the collector when End returns
// (named for the service and version, an error when publishes failed), and
// its context is what Inject writes, as lowercase traceparent.
func TestStartPublishExportsTheSendSpan(t *testing.T) {
	c := newCollector(t)
	t.Setenv("TRACEPARENT", "00-"+parentTrace+"-"+parentSpan+"-01")
	pt, err := StartPublish(context.Background(), os.Getenv, "1.2.3")
	if err != nil {
		t.Fatalf("StartPublish: %v", err)
	}
	m := &nats.Msg{Subject: "memindex.events.ns"}
	pt.Inject(m)
	if err := pt.End(context.Background(), 5, 2); err != nil {
		t.Fatalf("End: %v", err)
	}
	got := c.received()
	if len(got) != 1 {
		t.Fatalf("collector received %d spans when End returned, want the send span", len(got))
	}
	e := got[0]
	if e.span.Name != "send memindex.events" || hex.EncodeToString(e.span.TraceId) != parentTrace || hex.EncodeToString(e.span.ParentSpanId) != parentSpan {
		t.Errorf("span %q trace %x parent %x, want send memindex.events below %s/%s", e.span.Name, e.span.TraceId, e.span.ParentSpanId, parentTrace, parentSpan)
	}
	if e.service != DefaultServiceName || e.version != "1.2.3" {
		t.Errorf("resource service %q version %q, want %s 1.2.3", e.service, e.version, DefaultServiceName)
	}
	if e.span.Kind != tracepb.Span_SPAN_KIND_PRODUCER || e.span.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || !strings.Contains(e.span.Status.GetMessage(), "2 publishes failed") {
		t.Errorf("span kind %v status %v, want a producer span in error (2 publishes failed)", e.span.Kind, e.span.Status)
	}
	want := fmt.Sprintf("00-%s-%s-01", parentTrace, hex.EncodeToString(e.span.SpanId))
	if got := m.Header.Get("traceparent"); got != want {
		t.Errorf("injected traceparent = %q (headers %v), want %q", got, m.Header, want)
	}
}

// TestStartPublishOff: with tracing off, TRACEPARENT is passed on as it is
// and nothing is exported; with no TRACEPARENT either, nothing is injected.
func TestStartPublishOff(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	for _, tc := range []struct{ name, traceparent, want string }{
		{"traceparent passed on", "00-" + parentTrace + "-" + parentSpan + "-01", "00-" + parentTrace + "-" + parentSpan + "-01"},
		{"nothing", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TRACEPARENT", tc.traceparent)
			pt, err := StartPublish(context.Background(), os.Getenv, "1.2.3")
			if err != nil {
				t.Fatalf("StartPublish: %v", err)
			}
			m := &nats.Msg{Subject: "memindex.events.ns"}
			pt.Inject(m)
			if err := pt.End(context.Background(), 1, 0); err != nil {
				t.Fatalf("End: %v", err)
			}
			if got := m.Header.Get("traceparent"); got != tc.want {
				t.Errorf("injected traceparent = %q, want %q", got, tc.want)
			}
			if tc.want == "" && m.Header != nil {
				t.Errorf("headers %v, want none added", m.Header)
			}
		})
	}
	if got := c.received(); len(got) != 0 {
		t.Errorf("collector received %d spans with OTEL_TRACES_EXPORTER=none, want none", len(got))
	}
}

// TestStartPublishRefusesGRPC: a protocol memindex cannot export with is an
// error naming the variable, not a silent off.
func TestStartPublishRefusesGRPC(t *testing.T) {
	newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, err := StartPublish(context.Background(), os.Getenv, "1"); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("StartPublish with grpc: err = %v, want one naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
}
