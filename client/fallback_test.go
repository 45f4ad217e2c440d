package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"memindex"
)

// TestBreakerStates walks the breaker through its states with an injected
// clock: each step advances the clock, asks allow, reports the call's
// outcome, and checks what allow said and the state after.
func TestBreakerStates(t *testing.T) {
	fail := errors.New("primary down")
	type step struct {
		advance   time.Duration
		wantAllow bool
		outcome   string // "ok", "fail", "release" or "" (no call made)
		wantState BreakerState
	}
	cases := []struct {
		name  string
		cfg   BreakerConfig
		steps []step
	}{
		{"opens after N consecutive failures", BreakerConfig{Failures: 3, CoolDown: time.Minute}, []step{
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerOpen},
			{0, false, "", BreakerOpen},
		}},
		{"a success resets the count", BreakerConfig{Failures: 2, CoolDown: time.Minute}, []step{
			{0, true, "fail", BreakerClosed},
			{0, true, "ok", BreakerClosed},
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerOpen},
		}},
		{"stays open until the cool-down has passed", BreakerConfig{Failures: 1, CoolDown: time.Minute}, []step{
			{0, true, "fail", BreakerOpen},
			{59 * time.Second, false, "", BreakerOpen},
			{999 * time.Millisecond, false, "", BreakerOpen},
			{time.Millisecond, true, "", BreakerHalfOpen}, // exactly the cool-down: the probe goes
		}},
		{"half-open probe success closes", BreakerConfig{Failures: 1, CoolDown: time.Minute}, []step{
			{0, true, "fail", BreakerOpen},
			{time.Minute, true, "ok", BreakerClosed},
			{0, true, "", BreakerClosed},
		}},
		{"half-open probe failure reopens for a new cool-down", BreakerConfig{Failures: 3, CoolDown: time.Minute}, []step{
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerOpen},
			{2 * time.Minute, true, "fail", BreakerOpen}, // one failure is enough when half-open
			{30 * time.Second, false, "", BreakerOpen},
			{30 * time.Second, true, "ok", BreakerClosed},
		}},
		{"one probe at a time while half-open", BreakerConfig{Failures: 1, CoolDown: time.Second}, []step{
			{0, true, "fail", BreakerOpen},
			{time.Second, true, "", BreakerHalfOpen}, // the probe is in flight
			{0, false, "", BreakerHalfOpen},
			{time.Hour, false, "", BreakerHalfOpen},
		}},
		{"a released probe lets the next call probe", BreakerConfig{Failures: 1, CoolDown: time.Second}, []step{
			{0, true, "fail", BreakerOpen},
			{time.Second, true, "release", BreakerHalfOpen},
			{0, true, "ok", BreakerClosed},
		}},
		{"defaults: 3 failures, 30s", BreakerConfig{}, []step{
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerClosed},
			{0, true, "fail", BreakerOpen},
			{29 * time.Second, false, "", BreakerOpen},
			{time.Second, true, "ok", BreakerClosed},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			cfg := tc.cfg
			cfg.Now = clk.Now
			b := newBreaker(cfg)
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				call, ok, why := b.allow()
				if ok != s.wantAllow {
					t.Fatalf("step %d: allow()=%t (%s), want %t", i, ok, why, s.wantAllow)
				}
				if !ok && why == "" {
					t.Fatalf("step %d: allow refused without a reason", i)
				}
				switch s.outcome {
				case "ok":
					call.Success()
				case "fail":
					call.Failure(fail)
				case "release":
					call.Release()
				}
				if got := b.State(); got != s.wantState {
					t.Fatalf("step %d: State()=%s, want %s", i, got, s.wantState)
				}
			}
		})
	}
}

// stubManager is a Manager whose answers a test sets: err, when set, is
// every call's error. It stands in for a backend, not for NATS or SQLite.
type stubManager struct {
	name string
	mu   sync.Mutex
	err  error
	n    int
}

func (s *stubManager) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *stubManager) call() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.err
}

func (s *stubManager) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *stubManager) Search(_ context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	if err := s.call(); err != nil {
		return memindex.SearchResponse{}, err
	}
	return memindex.SearchResponse{Namespace: req.Namespace, Backend: s.name, Hits: []memindex.Hit{}}, nil
}

func (s *stubManager) Read(context.Context, memindex.ReadRequest) (memindex.ReadResponse, error) {
	return memindex.ReadResponse{}, s.call()
}

func (s *stubManager) Status(context.Context) ([]memindex.StatusResponse, error) {
	if err := s.call(); err != nil {
		return nil, err
	}
	return []memindex.StatusResponse{{Worker: s.name, Backend: s.name}}, nil
}
func (s *stubManager) Sync(context.Context, SyncRequest) error { return s.call() }
func (s *stubManager) ProbeEmbeddings(context.Context) error   { return s.call() }
func (s *stubManager) ProbeVectors(context.Context) error      { return s.call() }
func (s *stubManager) Close(context.Context) error             { return nil }

// stubFallback builds a fallback wrapper over two stub managers.
func stubFallback(cfg BreakerConfig) (*fallback, *stubManager, *stubManager) {
	p, fb := &stubManager{name: "remote"}, &stubManager{name: "local"}
	f := &fallback{primaryName: "remote", fallbackName: "local", br: newBreaker(cfg), primary: p, fb: fb}
	return f, p, fb
}

// TestFallbackAnnotatesAndRecovers: while the primary fails, answers come
// from the fallback and say why; the primary is not called while the
// breaker is open; after the cool-down one probe finds it back.
func TestFallbackAnnotatesAndRecovers(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	f, p, fb := stubFallback(BreakerConfig{Failures: 2, CoolDown: 10 * time.Second, Now: clk.Now})
	req := memindex.SearchRequest{Namespace: "agent-1", Query: "q"}
	search := func(wantBackend, wantReason string) {
		t.Helper()
		resp, err := f.Search(ctx, req)
		if err != nil {
			t.Fatalf("Search: %v", err)
		}
		if resp.Backend != wantBackend {
			t.Fatalf("Search() backend %q, want %q", resp.Backend, wantBackend)
		}
		switch {
		case wantReason == "" && resp.Fallback != nil:
			t.Fatalf("Search() fallback %+v, want none", resp.Fallback)
		case wantReason != "" && (resp.Fallback == nil || resp.Fallback.From != "remote" || !strings.Contains(resp.Fallback.Reason, wantReason)):
			t.Fatalf("Search() fallback %+v, want from remote with reason containing %q", resp.Fallback, wantReason)
		}
	}
	search("remote", "")
	p.setErr(ErrNoWorker)
	search("local", "no memindex worker")
	search("local", "no memindex worker") // second failure opens
	if got := f.BreakerState(); got != BreakerOpen {
		t.Fatalf("BreakerState()=%s after 2 failures, want open", got)
	}
	before := p.calls()
	p.setErr(nil) // the primary is back, but the breaker does not know yet
	search("local", "circuit open")
	if p.calls() != before {
		t.Fatalf("an open breaker called the primary (%d calls, want %d)", p.calls(), before)
	}
	sts, err := f.Status(ctx)
	if err != nil || len(sts) != 1 || sts[0].Backend != "local" || sts[0].Fallback == nil || !strings.Contains(sts[0].Fallback.Reason, "circuit open") {
		t.Fatalf("Status()=%+v, %v, want the fallback's status saying the circuit is open", sts, err)
	}
	clk.Advance(10 * time.Second)
	search("remote", "")
	if got := f.BreakerState(); got != BreakerClosed {
		t.Fatalf("BreakerState()=%s after a successful probe, want closed", got)
	}
	// A request error is the primary's answer: no fallback, no failure.
	p.setErr(&memindex.FieldError{Field: "query", Reason: "blank", Err: memindex.ErrInvalid})
	n := fb.calls()
	if _, err := f.Search(ctx, req); !errors.Is(err, memindex.ErrInvalid) {
		t.Fatalf("Search(invalid)=%v, want ErrInvalid from the primary", err)
	}
	if fb.calls() != n || f.BreakerState() != BreakerClosed {
		t.Fatalf("an invalid request went to the fallback or counted as a failure (state %s)", f.BreakerState())
	}
	// Both failing: the error names both.
	p.setErr(ErrNoWorker)
	fb.setErr(errors.New("disk gone"))
	if _, err := f.Search(ctx, req); err == nil || !strings.Contains(err.Error(), "remote failed") || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Search() with both down = %v, want an error naming both", err)
	}
}
