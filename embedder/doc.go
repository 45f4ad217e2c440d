// Package embedder turns text into vectors for the vector leg of search.
//
// It owns:
//
//   - the Embedder seam (embedder.go): Embed returns one L2-normalised vector
//     of Info().Dims per text, in order, and Info names the vector space, so
//     vectors of different providers, models or sizes are never mixed;
//   - the providers, one file each, each configured by a plain config struct
//     with Validate;
//   - Builtin (builtin.go), the deterministic offline embedder: feature
//     hashing of words, word pairs and character n-grams. It needs no network
//     or model and gives identical vectors on every machine, so it is the
//     fallback and the embedder of tests, but it is lexical, not semantic;
//   - Batched (batch.go), which splits a request into batches and runs them
//     through a bounded conc pool, reassembling the vectors in order;
//   - Cached (cache.go), which serves texts from a Cache keyed by CacheKey,
//     embeds only the misses and stores them, and MemoryCache (memcache.go),
//     an in-process LRU bounded in bytes;
//   - vector validation (validate.go): CheckVectors and Normalize;
//   - remote providers (openai.go, mistral.go, voyage.go, ollama.go,
//     gemini.go) on a shared retrying JSON client (http.go): backoff with
//     jitter that honours Retry-After and vendor reset headers, a cool-down
//     shared by a provider's requests, permanent errors that stop at once,
//     batches split to each vendor's limits and halved when it says too large;
//   - Breaker (breaker.go), a circuit breaker per provider (closed, open,
//     half-open probe; the state machine is internal/circuit's, shared with
//     the client's fallback) that fails fast while the provider is down, and
//     RateLimited (ratelimit.go), requests and tokens per minute;
//   - request observation (metrics.go): HTTPConfig.Observe is told about
//     every HTTP request of a remote provider (status or timeout, duration),
//     and Observed reports the calls of an embedder that sends none;
//   - provider URL safety (urlcheck.go): CheckURL and NewSafeHTTPClient refuse
//     cloud metadata, link-local and unspecified addresses, loopback the URL
//     did not name (also after DNS resolution and on every redirect).
//
// NewProvider (provider.go) builds the provider a ProviderConfig names, and
// NewStack (stack.go) the one stack every user runs — a node's serving
// embedder, a previous generation's and rebuild's: NewCached(NewBatched(p,
// pool), cache), with a remote provider p wrapped as
// NewBreaker(NewRateLimited(provider, rl), br): the cache answers what it
// can, only misses are batched, each batch is one rate-limited request, and
// vectors are checked before they are cached. Space and ParseSpace name a
// vector space as shards record it.
// Over the built-in embedder Cached uses no cache: recomputing is cheaper.
//
// It must not read the environment or files for its configuration (cmd/
// does, and passes config structs in; API keys come through
// ProviderConfig.Keys), know about NATS or the SQLite schema
// (the store package satisfies Cache), start goroutines that outlive a call,
// or log: errors are returned, wrapping the sentinels in errors.go.
package embedder
