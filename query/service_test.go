package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"memindex"
	"memindex/client"
	"memindex/internal/natstest"
)

// startService serves an engine over s on its own connection, stopped when
// the test ends, and returns a client on another connection.
func startService(tb testing.TB, nc *nats.Conn, cfg ServiceConfig, shard Searcher, status StatusFunc) *Service {
	tb.Helper()
	if cfg.Version == "" {
		cfg.Version = "1.0.0"
	}
	e := NewEngine(EngineConfig{}, routeTo(shard), testEmbedder(nil, nil))
	svc, err := NewService(nc, cfg, e, status)
	if err != nil {
		tb.Fatalf("NewService() error %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Stop(ctx); err != nil {
			tb.Errorf("Stop() error %v", err)
		}
	})
	return svc
}

// setup starts a nats-server, a service on one connection and returns a
// client connection.
func setup(tb testing.TB, cfg ServiceConfig, shard Searcher) (*nats.Conn, *Service) {
	tb.Helper()
	s := natstest.Server(tb)
	svc := startService(tb, natstest.Connect(tb, s), cfg, shard, nil)
	return natstest.Connect(tb, s), svc
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// waitEntered waits until a search has reached the blocking shard.
func waitEntered(tb testing.TB, shard *memShard) {
	tb.Helper()
	select {
	case <-shard.entered:
	case <-time.After(10 * time.Second):
		tb.Fatal("search never reached the shard")
	}
}

func TestServiceRoundTrip(t *testing.T) {
	nc, _ := setup(t, ServiceConfig{Worker: "w1"}, newTestShard())
	got, err := client.NewClient(nc).Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon", Explain: true})
	if err != nil {
		t.Fatalf("Client.Search() error %v", err)
	}
	if want := []string{"c1", "c2", "c3", "c4"}; !slices.Equal(hitIDs(got.Hits), want) {
		t.Fatalf("Client.Search()=%v, want %v", hitIDs(got.Hits), want)
	}
	if got.Type != "search.result" || got.Namespace != "agent-7" || got.Partition != 3 || got.AppliedSeq != 42 ||
		!got.Legs.Vector.Answered || !got.Legs.Keyword.Answered || got.Hits[0].Scores == nil {
		t.Fatalf("Client.Search()=%+v, want a full hybrid answer of agent-7", got)
	}
}

// TestServiceRawRequest is what `nats req memindex.search.agent-7 '{...}'`
// does: plain JSON in, plain JSON out, namespace from the subject.
func TestServiceRawRequest(t *testing.T) {
	nc, _ := setup(t, ServiceConfig{}, newTestShard())
	tests := []struct {
		name     string
		body     string
		wantHits int
	}{
		{"namespace from subject", `{"query":"Ana moving Lisbon","k":2}`, 2},
		{"namespace in body too", `{"namespace":"agent-7","query":"Ana","mode":"keyword","type":"search"}`, 2},
		{"no hits is an empty array", `{"query":"zebra","mode":"keyword"}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := nc.Request(memindex.SearchSubject("agent-7"), []byte(tt.body), 5*time.Second)
			mustTB(t, err)
			if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
				t.Fatalf("reply error %s: %s", code, msg.Data)
			}
			var got struct {
				Type string            `json:"type"`
				Hits []json.RawMessage `json:"hits"`
			}
			mustTB(t, json.Unmarshal(msg.Data, &got))
			if got.Type != "search.result" || got.Hits == nil || len(got.Hits) != tt.wantHits {
				t.Fatalf("reply=%s, want type search.result with %d hits", msg.Data, tt.wantHits)
			}
		})
	}
}

func TestServiceErrors(t *testing.T) {
	nc, _ := setup(t, ServiceConfig{}, newTestShard())
	tests := []struct {
		name     string
		subject  string
		body     string
		wantCode string
		wantMsg  string
	}{
		{"not json", "agent-7", `{"query":`, memindex.CodeBadRequest, "not a JSON search object"},
		{"empty body", "agent-7", ``, memindex.CodeBadRequest, `{"query":`},
		{"blank query names the field", "agent-7", `{"query":"  "}`, memindex.CodeBadRequest, "field query"},
		{"bad k names the field", "agent-7", `{"query":"x","k":-1}`, memindex.CodeBadRequest, "field k"},
		{"bad mode names the field", "agent-7", `{"query":"x","mode":"fuzzy"}`, memindex.CodeBadRequest, "field mode"},
		{"bad type names the field", "agent-7", `{"type":"message","query":"x"}`, memindex.CodeBadRequest, "field type"},
		{"namespace differs from subject", "agent-7", `{"namespace":"other","query":"x"}`, memindex.CodeBadRequest, "field namespace"},
		{"body too large", "agent-7", `{"query":"` + strings.Repeat("x", memindex.MaxRequestSize) + `"}`, memindex.CodeTooLarge, "over the limit of 65536"},
		{"query too large", "agent-7", `{"query":"` + strings.Repeat("x", memindex.MaxQueryBytes+1) + `"}`, memindex.CodeTooLarge, "field query"},
		{"unowned namespace", "elsewhere", `{"query":"x"}`, memindex.CodeNotFound, "not owned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := nc.Request(memindex.SearchSubject(tt.subject), []byte(tt.body), 5*time.Second)
			mustTB(t, err)
			code, desc := msg.Header.Get(micro.ErrorCodeHeader), msg.Header.Get(micro.ErrorHeader)
			var body memindex.ErrorBody
			if err := json.Unmarshal(msg.Data, &body); err != nil {
				t.Fatalf("error body %q is not a memindex.ErrorBody: %v", msg.Data, err)
			}
			if code != tt.wantCode || body.Code != tt.wantCode || !strings.Contains(desc, tt.wantMsg) || body.Message != desc {
				t.Fatalf("reply code %q %q body %+v, want %s containing %q", code, desc, body, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

// TestServicePanicIs500: a panicking shard costs one request a 500, not the
// worker its life.
func TestServicePanicIs500(t *testing.T) {
	shard := newTestShard()
	shard.panics = true
	nc, _ := setup(t, ServiceConfig{Workers: 1}, shard)
	c := client.NewClient(nc)
	for range 2 { // the only pool worker survives the first
		_, err := c.Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana", Mode: memindex.ModeKeyword})
		var rerr *client.RemoteError
		if !errors.As(err, &rerr) || rerr.Code != memindex.CodeInternal || !strings.Contains(rerr.Message, "keyword index corrupted") {
			t.Fatalf("Client.Search() error=%v, want 500 naming the panic", err)
		}
	}
}

func TestClientErrors(t *testing.T) {
	nc, _ := setup(t, ServiceConfig{}, newTestShard())
	c := client.NewClient(nc)
	tests := []struct {
		name     string
		req      memindex.SearchRequest
		wantCode string
		want     error
		wantMsg  string
	}{
		{"400 names the field", memindex.SearchRequest{Namespace: "agent-7", Query: "x", K: 1000}, memindex.CodeBadRequest, memindex.ErrInvalid, "field k"},
		{"413", memindex.SearchRequest{Namespace: "agent-7", Query: strings.Repeat("x", memindex.MaxQueryBytes+1)}, memindex.CodeTooLarge, memindex.ErrTooLarge, "field query"},
		{"404", memindex.SearchRequest{Namespace: "elsewhere", Query: "x"}, memindex.CodeNotFound, ErrNotOwned, "elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Search(ctxT(t), tt.req)
			var rerr *client.RemoteError
			if !errors.As(err, &rerr) || rerr.Code != tt.wantCode || !errors.Is(err, tt.want) || !strings.Contains(rerr.Message, tt.wantMsg) {
				t.Fatalf("Client.Search() error=%#v, want *client.RemoteError %s matching %v containing %q", err, tt.wantCode, tt.want, tt.wantMsg)
			}
			if !errors.Is(err, &client.RemoteError{Code: tt.wantCode}) {
				t.Fatalf("errors.Is(%v, &client.RemoteError{Code: %s})=false, want true", err, tt.wantCode)
			}
		})
	}

	// A namespace that cannot make a subject is refused before the network.
	if _, err := c.Search(ctxT(t), memindex.SearchRequest{Namespace: "a.b", Query: "x"}); !errors.Is(err, memindex.ErrInvalid) {
		t.Fatalf("Client.Search(namespace a.b) error=%v, want ErrInvalid", err)
	}
}

func TestClientNoWorker(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t))
	c := client.NewClient(nc)
	_, err := c.Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "x"})
	if !errors.Is(err, client.ErrNoWorker) || !strings.Contains(err.Error(), "memindex serve") {
		t.Fatalf("Client.Search() error=%v, want client.ErrNoWorker", err)
	}
	if _, err := c.Status(ctxT(t), 5*time.Second); !errors.Is(err, client.ErrNoWorker) {
		t.Fatalf("Client.Status() error=%v, want client.ErrNoWorker", err)
	}
}

// TestServiceOverloaded fills a pool of one worker and one pending slot: the
// third search is refused with 429 at once.
func TestServiceOverloaded(t *testing.T) {
	shard := newTestShard()
	shard.block, shard.entered = make(chan struct{}), make(chan struct{}, 4)
	nc, _ := setup(t, ServiceConfig{Workers: 1, MaxPending: 1}, shard)

	inbox := nc.NewRespInbox()
	replies, err := nc.SubscribeSync(inbox)
	mustTB(t, err)
	body := []byte(`{"query":"Ana","mode":"keyword"}`)
	subj := memindex.SearchSubject("agent-7")

	// 1: taken by the only worker, which blocks in KeywordSearch.
	mustTB(t, nc.PublishRequest(subj, inbox, body))
	waitEntered(t, shard)
	// 2: waits in the one pending slot. 3: same connection, so the service
	// sees it after 2, and the pool is full.
	mustTB(t, nc.PublishRequest(subj, inbox, body))
	_, err = client.NewClient(nc).Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana", Mode: memindex.ModeKeyword})
	if !errors.Is(err, ErrOverloaded) || !errors.Is(err, &client.RemoteError{Code: memindex.CodeOverloaded}) {
		t.Fatalf("third Client.Search() error=%v, want 429 ErrOverloaded", err)
	}

	close(shard.block)
	for i := range 2 {
		msg, err := replies.NextMsg(10 * time.Second)
		mustTB(t, err)
		if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
			t.Fatalf("reply %d error %s: %s, want a result", i+1, code, msg.Data)
		}
	}
}

// TestServiceStopWaits: Stop returns only after the search in flight has
// finished, and that search is answered.
func TestServiceStopWaits(t *testing.T) {
	s := natstest.Server(t)
	shard := newTestShard()
	shard.block, shard.entered = make(chan struct{}), make(chan struct{}, 1)
	svc, err := NewService(natstest.Connect(t, s), ServiceConfig{Version: "1.0.0", Workers: 1}, NewEngine(EngineConfig{}, routeTo(shard), nil), nil)
	mustTB(t, err)
	nc := natstest.Connect(t, s)
	inbox := nc.NewRespInbox()
	replies, err := nc.SubscribeSync(inbox)
	mustTB(t, err)
	mustTB(t, nc.PublishRequest(memindex.SearchSubject("agent-7"), inbox, []byte(`{"query":"Ana","mode":"keyword"}`)))
	waitEntered(t, shard)

	// A bounded Stop that runs out of time says so.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err = svc.Stop(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop(20ms) error=%v, want DeadlineExceeded while a search runs", err)
	}
	// It cancelled the search, whose reply says the worker is unavailable.
	msg, err := replies.NextMsg(10 * time.Second)
	mustTB(t, err)
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != memindex.CodeUnavailable {
		t.Fatalf("cancelled search reply code %q %s, want 503", code, msg.Data)
	}
	mustTB(t, svc.Stop(ctxT(t)))

	// A stopped service no longer answers.
	if _, err := client.NewClient(nc).Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "x"}); !errors.Is(err, client.ErrNoWorker) {
		t.Fatalf("Client.Search() after Stop error=%v, want client.ErrNoWorker", err)
	}
}

func TestServiceStopFinishesInFlight(t *testing.T) {
	s := natstest.Server(t)
	shard := newTestShard()
	shard.block, shard.entered = make(chan struct{}), make(chan struct{}, 1)
	svc, err := NewService(natstest.Connect(t, s), ServiceConfig{Version: "1.0.0", Workers: 1}, NewEngine(EngineConfig{}, routeTo(shard), nil), nil)
	mustTB(t, err)
	nc := natstest.Connect(t, s)
	inbox := nc.NewRespInbox()
	replies, err := nc.SubscribeSync(inbox)
	mustTB(t, err)
	mustTB(t, nc.PublishRequest(memindex.SearchSubject("agent-7"), inbox, []byte(`{"query":"Ana","mode":"keyword"}`)))
	waitEntered(t, shard)

	stopped := make(chan error, 1)
	go func() { stopped <- svc.Stop(ctxT(t)) }() // waited on below
	select {
	case err := <-stopped:
		t.Fatalf("Stop() returned %v while a search was in flight", err)
	case <-time.After(50 * time.Millisecond):
		// Still waiting, as it should; a later return is checked below.
	}
	close(shard.block)
	mustTB(t, <-stopped)
	shard.mu.Lock()
	finished := shard.finished
	shard.mu.Unlock()
	if finished != 1 {
		t.Fatalf("Stop() returned with %d searches finished, want 1", finished)
	}
	msg, err := replies.NextMsg(10 * time.Second)
	mustTB(t, err)
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("in-flight search reply error %s: %s, want a result", code, msg.Data)
	}
}

// TestClientStatus gathers the answers of two workers: the status endpoint
// has no queue group, so both answer one request.
func TestClientStatus(t *testing.T) {
	s := natstest.Server(t)
	srv := natstest.Connect(t, s)
	for _, w := range []string{"w2", "w1"} {
		startService(t, srv, ServiceConfig{Worker: w}, newTestShard(), func(ctx context.Context) memindex.StatusResponse {
			return memindex.StatusResponse{Ready: true, Partitions: []memindex.PartitionStatus{{Partition: 3, AppliedSeq: 42}}}
		})
	}
	got, err := client.NewClient(natstest.Connect(t, s)).Status(ctxT(t), 300*time.Millisecond)
	mustTB(t, err)
	var workers []string
	for _, st := range got {
		workers = append(workers, st.Worker)
		if st.Type != "status" || st.Version != 1 || !st.Ready || len(st.Partitions) != 1 {
			t.Fatalf("Client.Status() reply %+v, want a ready status v1 with one partition", st)
		}
	}
	if want := []string{"w1", "w2"}; !slices.Equal(workers, want) {
		t.Fatalf("Client.Status() workers=%v, want %v", workers, want)
	}
}

func TestServiceConfigValidate(t *testing.T) {
	tests := []struct {
		cfg ServiceConfig
		ok  bool
	}{
		{ServiceConfig{Version: "1.0.0"}, true},
		{ServiceConfig{}, false},
		{ServiceConfig{Version: "1.0.0", Workers: -1}, false},
		{ServiceConfig{Version: "1.0.0", MaxPending: -1}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.cfg), func(t *testing.T) {
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate()=%v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestCodeFor(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", memindex.ErrInvalid), memindex.CodeBadRequest},
		{&memindex.FieldError{Field: "query", Err: memindex.ErrTooLarge}, memindex.CodeTooLarge},
		{fmt.Errorf("x: %w", ErrNotOwned), memindex.CodeNotFound},
		{fmt.Errorf("x: %w", ErrOverloaded), memindex.CodeOverloaded},
		{fmt.Errorf("x: %w", ErrNotReady), memindex.CodeUnavailable},
		{fmt.Errorf("x: %w", ErrUnavailable), memindex.CodeUnavailable},
		{context.DeadlineExceeded, memindex.CodeUnavailable},
		{errors.New("disk full"), memindex.CodeInternal},
	}
	for _, tt := range tests {
		if got := codeFor(tt.err); got != tt.want {
			t.Fatalf("codeFor(%v)=%s, want %s", tt.err, got, tt.want)
		}
		// And back: a remote error of that code matches the same sentinel.
		if s := (&client.RemoteError{Code: tt.want}).Unwrap(); s != nil && !errors.Is(tt.err, s) && tt.want != memindex.CodeUnavailable {
			t.Fatalf("RemoteError{Code: %s}.Unwrap()=%v, which %v does not match", tt.want, s, tt.err)
		}
	}
}
