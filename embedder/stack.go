package embedder

// StackConfig configures the embedder stack every user of a provider runs
// (a node's generations, rebuild): NewStack builds it.
type StackConfig struct {
	Provider  ProviderConfig
	RateLimit RateLimitConfig // a remote provider's requests and tokens per minute
	Breaker   BreakerConfig   // a remote provider's circuit breaker
	Pool      PoolConfig      // texts per request and requests in flight
	// Cache holds the vectors of texts embedded before; it is shared by
	// every stack of a data directory (the key names the vector space), and
	// its size bound is the caller's (store.CacheConfig.MaxBytes).
	Cache Cache
}

// Stack is a provider wrapped the one way memindex runs it: provider → rate
// limit → breaker (remote providers) → batches → cache. The built-in
// embedder sends no requests, so it has no rate limit or breaker, and
// Observe reports its calls instead of HTTP requests.
type Stack struct {
	// Cached is the top of the stack, the embedder to use.
	*Cached
	// Breaker is the remote provider's circuit breaker; nil for the
	// built-in embedder.
	Breaker *Breaker
}

// NewStack builds the provider of c.Provider and wraps it in the stack.
func NewStack(c StackConfig) (*Stack, error) {
	e, err := NewProvider(c.Provider)
	if err != nil {
		return nil, err
	}
	s := &Stack{}
	if e.Info().Provider == "builtin" {
		if c.Provider.Observe != nil { // remote providers report their HTTP requests
			e = NewObserved(e, c.Provider.Observe)
		}
	} else {
		// Requests within the provider's rate limits, and a breaker that
		// fails fast while it is down (the backfill probes it).
		s.Breaker = NewBreaker(NewRateLimited(e, c.RateLimit), c.Breaker)
		e = s.Breaker
	}
	s.Cached = NewCached(NewBatched(e, c.Pool), c.Cache)
	return s, nil
}
