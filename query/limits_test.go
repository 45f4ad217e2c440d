package query

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"memindex"
	"memindex/client"
)

// TestServiceRateLimitIs429WithRetryAfter: past its bucket a namespace is
// refused 429 with a Retry-After header, which the client surfaces as
// client.RemoteError.RetryAfter; reads share the bucket; other namespaces are not
// affected.
func TestServiceRateLimitIs429WithRetryAfter(t *testing.T) {
	// 1 request every 10 s, bursts of 2: the test never waits for a token.
	nc, svc := setup(t, ServiceConfig{RatePerNamespace: 0.1, RateBurst: 2}, newTestShard())
	c := client.NewClient(nc)
	req := memindex.SearchRequest{Namespace: "agent-7", Query: "Ana", Mode: memindex.ModeKeyword}
	if _, err := c.Search(ctxT(t), req); err != nil {
		t.Fatalf("first Client.Search() error %v", err)
	}
	// A read takes the second token (its answer does not matter here).
	_, err := c.Read(ctxT(t), memindex.ReadRequest{Namespace: "agent-7", SessionKey: "chat", SessionID: "s1"})
	if errors.Is(err, ErrOverloaded) {
		t.Fatalf("Client.Read() error %v, want it within the burst", err)
	}
	_, err = c.Search(ctxT(t), req)
	var rerr *client.RemoteError
	if !errors.As(err, &rerr) || rerr.Code != memindex.CodeOverloaded || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("third Client.Search() error=%v, want 429 ErrOverloaded", err)
	}
	if rerr.RetryAfter < time.Second || rerr.RetryAfter > 10*time.Second {
		t.Fatalf("RetryAfter=%v, want 1s..10s (one token every 10 s)", rerr.RetryAfter)
	}
	if !strings.Contains(rerr.Message, "namespace agent-7 is over its limit of 0.1 searches and reads a second") {
		t.Fatalf("message %q, want it to name the namespace and the limit", rerr.Message)
	}
	// The raw reply carries the header in whole seconds.
	msg, err := nc.Request(memindex.ReadSubject("agent-7"), []byte(`{"sessionKey":"chat","sessionId":"s1"}`), 5*time.Second)
	mustTB(t, err)
	if code, ra := msg.Header.Get(micro.ErrorCodeHeader), msg.Header.Get(memindex.RetryAfterHeader); code != memindex.CodeOverloaded || ra == "" {
		t.Fatalf("read reply code %q Retry-After %q, want 429 with a Retry-After", code, ra)
	} else if secs, err := strconv.Atoi(ra); err != nil || secs < 1 || secs > 10 {
		t.Fatalf("Retry-After %q, want whole seconds 1..10", ra)
	}
	// Another namespace has its own bucket (it is not owned here: 404, not 429).
	if _, err := c.Search(ctxT(t), memindex.SearchRequest{Namespace: "elsewhere", Query: "x"}); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Client.Search(elsewhere) error=%v, want 404 ErrNotOwned", err)
	}
	if n := svc.limiter.len(); n != 2 {
		t.Fatalf("limiter holds %d namespaces, want 2", n)
	}
}

// TestServiceConfiguredLimits: lowered query and k caps answer 413 and 400
// naming the field and the limit.
func TestServiceConfiguredLimits(t *testing.T) {
	nc, _ := setup(t, ServiceConfig{Limits: memindex.Limits{MaxQueryBytes: 10, MaxK: 3}}, newTestShard())
	c := client.NewClient(nc)
	tests := []struct {
		name     string
		req      memindex.SearchRequest
		wantCode string
		wantMsg  string
	}{
		{"query over", memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon"}, memindex.CodeTooLarge, "field query: is 17 bytes, over the limit of 10"},
		{"k over", memindex.SearchRequest{Namespace: "agent-7", Query: "Ana", K: 4}, memindex.CodeBadRequest, "field k: must be between 1 and 3, got 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Search(ctxT(t), tt.req)
			var rerr *client.RemoteError
			if !errors.As(err, &rerr) || rerr.Code != tt.wantCode || !strings.Contains(rerr.Message, tt.wantMsg) {
				t.Fatalf("Client.Search() error=%v, want %s containing %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
	got, err := c.Search(ctxT(t), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana", Mode: memindex.ModeKeyword})
	if err != nil || len(got.Hits) > 3 {
		t.Fatalf("Client.Search(default k)=%d hits, %v; want at most 3 (k defaults within the cap)", len(got.Hits), err)
	}
}

func TestServiceConfigValidateLimits(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  ServiceConfig
		want string
	}{
		{"negative rate", ServiceConfig{Version: "1.0.0", RatePerNamespace: -1}, "rate per namespace"},
		{"NaN rate", ServiceConfig{Version: "1.0.0", RatePerNamespace: nanF()}, "rate per namespace"},
		{"negative burst", ServiceConfig{Version: "1.0.0", RateBurst: -1}, "rate burst"},
		{"negative max namespaces", ServiceConfig{Version: "1.0.0", MaxNamespaces: -1}, "max namespaces"},
		{"k over the hard cap", ServiceConfig{Version: "1.0.0", Limits: memindex.Limits{MaxK: memindex.MaxK + 1}}, "maxK"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate()=%v, want an error naming %q", err, tt.want)
			}
		})
	}
}

func nanF() float64 { z := 0.0; return z / z }

// TestServiceBoundedUnderFlood: concurrent floods of oversized requests and
// of requests over many namespaces leave the service holding at most
// MaxNamespaces rate buckets and MaxPending queued searches; everything
// else is refused at once (413, 429 with Retry-After), nothing waits in a
// hidden queue. It asserts sizes, not timings.
func TestServiceBoundedUnderFlood(t *testing.T) {
	const (
		maxNS      = 16
		maxPending = 4
		namespaces = 300
		oversized  = 60
		senders    = 6
	)
	shard := newTestShard()
	shard.block, shard.entered = make(chan struct{}), make(chan struct{}, 8)
	nc, svc := setup(t, ServiceConfig{Workers: 1, MaxPending: maxPending, RatePerNamespace: 0.01, RateBurst: 1, MaxNamespaces: maxNS}, shard)
	inbox := nc.NewRespInbox()
	replies, err := nc.SubscribeSync(inbox)
	mustTB(t, err)
	mustTB(t, replies.SetPendingLimits(-1, -1))

	// The only pool worker takes one search and blocks in the shard.
	body := []byte(`{"query":"Ana","mode":"keyword"}`)
	mustTB(t, nc.PublishRequest(memindex.SearchSubject("agent-7"), inbox, body))
	waitEntered(t, shard)

	// Flood: every namespace twice, and oversized bodies, from several
	// goroutines at once.
	big := []byte(`{"query":"` + strings.Repeat("x", memindex.MaxRequestSize) + `"}`)
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for g := range senders {
		wg.Go(func() {
			for i := g; i < namespaces; i += senders {
				subj := memindex.SearchSubject(fmt.Sprintf("tenant-%d", i))
				for range 2 {
					if err := nc.PublishRequest(subj, inbox, body); err != nil {
						errs <- err
						return
					}
				}
			}
			for i := g; i < oversized; i += senders {
				if err := nc.PublishRequest(memindex.SearchSubject(fmt.Sprintf("big-%d", i)), inbox, big); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("PublishRequest: %v", err)
	}

	// Every request but the maxPending queued ones is answered while the
	// worker is still blocked: refused at once.
	sent := 2*namespaces + oversized
	codes := map[string]int{}
	for range sent - maxPending {
		msg, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after %v replies: %v (want %d refusals while the worker is blocked)", codes, err, sent-maxPending)
		}
		code := msg.Header.Get(micro.ErrorCodeHeader)
		codes[code]++
		if code == memindex.CodeOverloaded && msg.Header.Get(memindex.RetryAfterHeader) == "" {
			t.Fatalf("429 reply without a Retry-After header: %q", msg.Data)
		}
	}
	if codes[memindex.CodeTooLarge] != oversized || codes[memindex.CodeOverloaded] != 2*namespaces-maxPending {
		t.Fatalf("refusals by code %v, want %d×413 and %d×429", codes, oversized, 2*namespaces-maxPending)
	}
	if n := svc.limiter.len(); n > maxNS {
		t.Fatalf("limiter holds %d namespaces after a flood of %d, want at most %d", n, namespaces, maxNS)
	}
	if n := len(svc.jobs); n != maxPending {
		t.Fatalf("%d searches queued, want exactly MaxPending=%d", n, maxPending)
	}

	// Released, the blocked search and the queued ones are answered by the
	// engine (agent-7: a result; the tenants are not owned here: 404).
	close(shard.block)
	for i := range 1 + maxPending {
		msg, err := replies.NextMsg(10 * time.Second)
		mustTB(t, err)
		if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" && code != memindex.CodeNotFound {
			t.Fatalf("reply %d after release: code %s %s, want a result or 404", i+1, code, msg.Data)
		}
	}
	if msg, err := replies.NextMsg(200 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("an extra reply %v, %v: want none", msg, err)
	}
}
