package embedder

import (
	"context"
	"fmt"

	"github.com/sourcegraph/conc/pool"
)

// Defaults of PoolConfig.
const (
	defaultBatchSize   = 64
	defaultConcurrency = 4
)

// PoolConfig bounds how Batched calls its inner embedder.
type PoolConfig struct {
	// BatchSize is the most texts sent in one inner call; 0 means 64.
	BatchSize int
	// Concurrency is the most inner calls in flight for one Embed; 0 means 4.
	Concurrency int
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
// Zero fields take their defaults.
func (c PoolConfig) Validate() error {
	if c.BatchSize < 0 {
		return fmt.Errorf("batch size %d is negative: %w", c.BatchSize, ErrInvalidConfig)
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("concurrency %d is negative: %w", c.Concurrency, ErrInvalidConfig)
	}
	return nil
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.Concurrency <= 0 {
		c.Concurrency = defaultConcurrency
	}
	return c
}

// Batched is an Embedder that splits a request into batches of at most
// BatchSize texts and sends them to its inner embedder, at most Concurrency
// at a time, through a bounded conc pool. The bound is per Embed call: share
// one Batched across callers and limit callers separately (or rate-limit the
// provider) to bound the total.
type Batched struct {
	inner Embedder
	cfg   PoolConfig
}

var _ Embedder = (*Batched)(nil)

// NewBatched wraps inner. Zero or negative fields of cfg take their
// defaults; call cfg.Validate first to reject bad configuration instead.
func NewBatched(inner Embedder, cfg PoolConfig) *Batched {
	return &Batched{inner: inner, cfg: cfg.withDefaults()}
}

// Info returns the inner embedder's Info: batching does not change vectors.
func (b *Batched) Info() Info { return b.inner.Info() }

// Embed returns the vectors of req.Texts in order. On the first failing
// batch it cancels the batches still running and returns that batch's error,
// naming the texts it covered; an inner call that returns the wrong number of
// vectors fails with ErrBadVector.
func (b *Batched) Embed(ctx context.Context, req Request) ([][]float32, error) {
	n := len(req.Texts)
	if n == 0 {
		return [][]float32{}, nil
	}
	size := b.cfg.BatchSize
	if n <= size { // one batch: no pool, no goroutine
		return b.batch(ctx, req, 0, n)
	}
	out := make([][]float32, n)
	p := pool.New().WithContext(ctx).WithMaxGoroutines(b.cfg.Concurrency).WithCancelOnError().WithFirstError()
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil { // an earlier batch failed: don't call the provider
				return err
			}
			vecs, err := b.batch(ctx, req, lo, hi)
			if err != nil {
				return err
			}
			copy(out[lo:hi], vecs) // disjoint ranges: no lock needed
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// batch embeds req.Texts[lo:hi] with one inner call.
func (b *Batched) batch(ctx context.Context, req Request, lo, hi int) ([][]float32, error) {
	vecs, err := b.inner.Embed(ctx, Request{Texts: req.Texts[lo:hi:hi], Kind: req.Kind})
	if err != nil {
		return nil, fmt.Errorf("embed texts %d..%d: %w", lo, hi-1, err)
	}
	if len(vecs) != hi-lo {
		return nil, fmt.Errorf("embed texts %d..%d: got %d vectors for %d texts: %w", lo, hi-1, len(vecs), hi-lo, ErrBadVector)
	}
	return vecs, nil
}
