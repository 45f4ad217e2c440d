package embedder

import "errors"

// Sentinel errors of the embedder package. Callers test for them with
// errors.Is; the returned errors wrap them with the details.
var (
	// ErrBadVector is wrapped when an embedder returns vectors that cannot be
	// used: the wrong count, the wrong length, NaN or Inf components, or an
	// all-zero vector. It is returned by CheckVectors, and by Batched and
	// Cached when their inner embedder misbehaves. Retrying the same request
	// is unlikely to help.
	ErrBadVector = errors.New("bad vector")

	// ErrInvalidConfig is wrapped by the Validate methods of the config
	// structs when a setting is out of range.
	ErrInvalidConfig = errors.New("invalid embedder config")

	// ErrUnsafeURL is wrapped, with the reason, by CheckURL and by the dialer
	// and redirect policy of NewSafeHTTPClient when a provider URL, a
	// redirect target or a resolved address could reach what the worker must
	// not (a cloud metadata service, a link-local or unspecified address,
	// loopback the URL did not name) or carries credentials in userinfo.
	ErrUnsafeURL = errors.New("unsafe URL")

	// ErrPermanent is matched by a *ProviderError that retrying cannot fix: a
	// rejected key (401, 403), an unknown model (404), an invalid request
	// (400), an exhausted quota, or one text too large for any request. The
	// provider was asked once; fix the configuration or the input.
	ErrPermanent = errors.New("permanent provider error")

	// ErrRateLimited is matched by a *ProviderError for a 429 answer that
	// was still rate limited when the retries ran out, or when the context
	// ended while waiting to retry it. Slow down or try again later.
	ErrRateLimited = errors.New("rate limited")

	// ErrBatchTooLarge is matched by a *ProviderError for an answer saying a
	// request had too many texts or tokens (413, or a 400 whose message says
	// so). Providers split such a batch in half and retry; callers see it
	// only when one text alone is too large, together with ErrPermanent.
	ErrBatchTooLarge = errors.New("batch too large")

	// ErrBreakerOpen is wrapped by a Breaker's Embed when it fails a call
	// at once without asking the provider: the breaker is open after
	// consecutive failures (the message says until when), or half-open with
	// its one probe still in flight. Try again after the cool-down.
	ErrBreakerOpen = errors.New("circuit breaker open")
)
