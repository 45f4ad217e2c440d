package embedder

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// indexEmbedder returns for text "i" the vector [i, 1], so tests can see
// which text a vector belongs to, and records every call's texts.
type indexEmbedder struct {
	mu    sync.Mutex
	calls [][]string
}

func (e *indexEmbedder) Info() Info { return Info{Provider: "test", Model: "index", Dims: 2} }

func (e *indexEmbedder) Embed(_ context.Context, req Request) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, append([]string(nil), req.Texts...))
	e.mu.Unlock()
	out := make([][]float32, len(req.Texts))
	for i, t := range req.Texts {
		n, err := strconv.Atoi(t)
		if err != nil {
			n = -1
		}
		out[i] = []float32{float32(n), 1}
	}
	return out, nil
}

func (e *indexEmbedder) Calls() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.calls...)
}

func numberTexts(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = strconv.Itoa(i)
	}
	return texts
}

func TestPoolConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  PoolConfig
		ok   bool
	}{
		{"zero takes defaults", PoolConfig{}, true},
		{"explicit", PoolConfig{BatchSize: 100, Concurrency: 8}, true},
		{"negative batch size", PoolConfig{BatchSize: -1}, false},
		{"negative concurrency", PoolConfig{Concurrency: -2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%+v)=%v, want ok=%v", tt.cfg, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate(%+v)=%v, want it to wrap ErrInvalidConfig", tt.cfg, err)
			}
		})
	}
}

func TestBatchedOrder(t *testing.T) {
	tests := []struct {
		name      string
		texts     int
		cfg       PoolConfig
		wantCalls int
	}{
		{"empty request", 0, PoolConfig{}, 0},
		{"one text", 1, PoolConfig{}, 1},
		{"exactly one default batch", 64, PoolConfig{}, 1},
		{"one past a batch", 65, PoolConfig{}, 2},
		{"many small batches", 1000, PoolConfig{BatchSize: 7, Concurrency: 3}, 143},
		{"serial", 50, PoolConfig{BatchSize: 10, Concurrency: 1}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &indexEmbedder{}
			b := NewBatched(inner, tt.cfg)
			vecs, err := b.Embed(context.Background(), Request{Texts: numberTexts(tt.texts)})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(vecs) != tt.texts {
				t.Fatalf("Embed returned %d vectors, want %d", len(vecs), tt.texts)
			}
			for i, v := range vecs {
				if int(v[0]) != i {
					t.Fatalf("vector %d belongs to text %v, want %d", i, v[0], i)
				}
			}
			calls := inner.Calls()
			if len(calls) != tt.wantCalls {
				t.Fatalf("inner called %d times, want %d", len(calls), tt.wantCalls)
			}
			size := tt.cfg.withDefaults().BatchSize
			for _, c := range calls {
				if len(c) > size {
					t.Fatalf("inner got a batch of %d texts, want <= %d", len(c), size)
				}
			}
			if got := b.Info(); got != inner.Info() {
				t.Fatalf("Info()=%+v, want the inner %+v", got, inner.Info())
			}
		})
	}
}

// TestBatchedBound checks that Concurrency inner calls run at once and never
// more: each call waits until Concurrency calls have started, so a pool that
// allowed fewer would time out and one that allowed more would be seen.
func TestBatchedBound(t *testing.T) {
	for _, limit := range []int{1, 2, 4, 9} {
		t.Run(fmt.Sprintf("concurrency=%d", limit), func(t *testing.T) {
			var cur, peak atomic.Int64
			reached := make(chan struct{})
			var once sync.Once
			inner := Func{Desc: Info{Dims: 2}, EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
				n := cur.Add(1)
				defer cur.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n >= int64(limit) {
					once.Do(func() { close(reached) })
				}
				select {
				case <-reached:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return (&indexEmbedder{}).Embed(ctx, req)
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b := NewBatched(inner, PoolConfig{BatchSize: 3, Concurrency: limit})
			vecs, err := b.Embed(ctx, Request{Texts: numberTexts(3*limit*5 + 1)})
			if err != nil {
				t.Fatalf("Embed: %v (peak concurrency %d)", err, peak.Load())
			}
			if len(vecs) != 3*limit*5+1 {
				t.Fatalf("Embed returned %d vectors, want %d", len(vecs), 3*limit*5+1)
			}
			if got := peak.Load(); got != int64(limit) {
				t.Fatalf("peak concurrent inner calls=%d, want %d", got, limit)
			}
		})
	}
}

func TestBatchedErrors(t *testing.T) {
	errProvider := errors.New("provider down")
	tests := []struct {
		name  string
		inner func(ctx context.Context, req Request) ([][]float32, error)
		want  error
	}{
		{"inner error", func(_ context.Context, req Request) ([][]float32, error) {
			if req.Texts[0] == "20" {
				return nil, errProvider
			}
			return (&indexEmbedder{}).Embed(context.Background(), req)
		}, errProvider},
		{"too few vectors", func(_ context.Context, req Request) ([][]float32, error) {
			v, _ := (&indexEmbedder{}).Embed(context.Background(), req)
			return v[1:], nil
		}, ErrBadVector},
	}
	for _, tt := range tests {
		for _, n := range []int{10, 100} { // single batch and pooled paths
			t.Run(fmt.Sprintf("%s/texts=%d", tt.name, n), func(t *testing.T) {
				texts := numberTexts(n)
				if n == 10 {
					texts[0] = "20"
				}
				b := NewBatched(Func{EmbedFunc: tt.inner}, PoolConfig{BatchSize: 10, Concurrency: 2})
				vecs, err := b.Embed(context.Background(), Request{Texts: texts})
				if !errors.Is(err, tt.want) {
					t.Fatalf("Embed()=%v, want %v", err, tt.want)
				}
				if vecs != nil {
					t.Fatalf("Embed returned %d vectors with an error, want none", len(vecs))
				}
			})
		}
	}
}

func TestBatchedCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	inner := Func{EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
		calls.Add(1)
		return nil, ctx.Err()
	}}
	_, err := NewBatched(inner, PoolConfig{BatchSize: 1, Concurrency: 2}).Embed(ctx, Request{Texts: numberTexts(50)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed(cancelled)=%v, want context.Canceled", err)
	}
	if got := calls.Load(); got != 0 {
		t.Fatalf("inner called %d times after cancellation, want 0", got)
	}
}
