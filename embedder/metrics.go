package embedder

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Codes of a request outcome other than an HTTP status, as reported to a
// RequestObserver.
const (
	// CodeOK is a call of an embedder that sends no HTTP request (the
	// built-in one) that succeeded.
	CodeOK = "ok"
	// CodeError is a failed call, or a request that got no answer for
	// another reason than a timeout or cancellation (a refused connection).
	CodeError = "error"
	// CodeTimeout is a request that got no answer within HTTPConfig.Timeout.
	CodeTimeout = "timeout"
	// CodeCanceled is a request abandoned because its caller gave up.
	CodeCanceled = "canceled"
)

// RequestObserver is told about each request sent to an embedding provider:
// the provider (as in Info), the code (the HTTP status of the answer, like
// "200" or "429", or one of CodeTimeout, CodeCanceled, CodeError; CodeOK
// and CodeError for an embedder observed with Observed) and how long the
// request took, body included. Each retry is a request of its own. It is
// called on the request's goroutine and must be quick and safe for
// concurrent use.
type RequestObserver func(provider, code string, took time.Duration)

// observe reports one request of c that started at start.
func (c *httpClient) observe(code string, start time.Time) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(c.provider, code, time.Since(start))
	}
}

// wireCode is the code of a request that got no answer: ctx is the
// caller's context, rctx the request's own (bounded by the timeout).
func wireCode(ctx, rctx context.Context) string {
	switch {
	case ctx.Err() != nil:
		return CodeCanceled
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return CodeTimeout
	}
	return CodeError
}

// statusCode is the code of an answer with HTTP status s.
func statusCode(s int) string { return strconv.Itoa(s) }

// Observed is an Embedder that reports each call of an embedder that sends
// no HTTP request of its own (the built-in one) to a RequestObserver, as a
// request with code CodeOK or CodeError. Remote providers report their HTTP
// requests themselves, through HTTPConfig.Observe.
type Observed struct {
	inner   Embedder
	observe RequestObserver
}

var _ Embedder = (*Observed)(nil)

// NewObserved wraps inner; a nil observe makes it a plain pass-through.
func NewObserved(inner Embedder, observe RequestObserver) *Observed {
	return &Observed{inner: inner, observe: observe}
}

// Info returns the inner embedder's Info.
func (o *Observed) Info() Info { return o.inner.Info() }

// Embed calls the inner embedder and reports the call.
func (o *Observed) Embed(ctx context.Context, req Request) ([][]float32, error) {
	if o.observe == nil {
		return o.inner.Embed(ctx, req)
	}
	start := time.Now()
	vecs, err := o.inner.Embed(ctx, req)
	code := CodeOK
	if err != nil {
		code = CodeError
	}
	o.observe(o.inner.Info().Provider, code, time.Since(start))
	return vecs, err
}
