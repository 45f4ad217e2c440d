package embedder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of HTTPConfig.
const (
	defaultHTTPTimeout = 30 * time.Second
	defaultMaxRetries  = 5
	defaultBaseBackoff = 500 * time.Millisecond
	defaultMaxBackoff  = 30 * time.Second

	// maxResponseBytes bounds a provider's answer: 2048 vectors of 3072
	// floats printed in JSON stay well below it.
	maxResponseBytes = 256 << 20
	// maxMessageBytes bounds the part of a non-JSON error body kept in a
	// ProviderError's message.
	maxMessageBytes = 300
)

// HTTPConfig configures how a provider talks HTTP: timeouts, retries and
// backoff. The zero value takes the defaults.
type HTTPConfig struct {
	// Client sends the requests; nil means a new http.Client with no
	// overall timeout (Timeout bounds each request instead).
	Client *http.Client
	// Timeout bounds one request, from sending it to reading the whole
	// answer; 0 means 30s. A timed-out request is retried.
	Timeout time.Duration
	// MaxRetries is the most retries of one request after its first
	// attempt; 0 means 5 and a negative value means none.
	MaxRetries int
	// BaseBackoff is the backoff before the first retry; it doubles with
	// each retry up to MaxBackoff, and each wait is drawn uniformly between
	// 0 and that bound ("full jitter"). 0 means 500ms.
	BaseBackoff time.Duration
	// MaxBackoff caps the backoff; 0 means 30s. A Retry-After from the
	// provider is honoured even when it is longer.
	MaxBackoff time.Duration
	// Observe, when not nil, is told about every request (see metrics.go).
	Observe RequestObserver
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c HTTPConfig) Validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("http timeout %v is negative: %w", c.Timeout, ErrInvalidConfig)
	case c.BaseBackoff < 0:
		return fmt.Errorf("base backoff %v is negative: %w", c.BaseBackoff, ErrInvalidConfig)
	case c.MaxBackoff < 0:
		return fmt.Errorf("max backoff %v is negative: %w", c.MaxBackoff, ErrInvalidConfig)
	}
	return nil
}

func (c HTTPConfig) withDefaults() HTTPConfig {
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	if c.Timeout == 0 {
		c.Timeout = defaultHTTPTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = defaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.BaseBackoff == 0 {
		c.BaseBackoff = defaultBaseBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.BaseBackoff)
	return c
}

// ProviderError is a failed request to an embedding provider, after any
// retries. It matches ErrPermanent, ErrRateLimited and ErrBatchTooLarge with
// errors.Is as documented there. Its text never contains the API key: the
// key is replaced by "[redacted]" if the provider echoes it.
type ProviderError struct {
	// Provider names the provider, as in Info.
	Provider string
	// Status is the HTTP status of the last answer, or 0 when there was
	// none (a timeout or a connection error).
	Status int
	// Code is the provider's error code or type, when it gave one.
	Code string
	// Message is the provider's message, or what went wrong on the wire.
	Message string
	// Permanent says retrying the same request cannot succeed.
	Permanent bool
	// BatchTooLarge says the provider rejected the request's size.
	BatchTooLarge bool
	// RetryAfter is how long the provider asked to wait, or 0.
	RetryAfter time.Duration
}

// Error returns the provider, status, code and message.
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	return b.String()
}

// Is reports whether e matches ErrPermanent, ErrRateLimited or
// ErrBatchTooLarge.
func (e *ProviderError) Is(target error) bool {
	switch target {
	case ErrPermanent:
		return e.Permanent
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests && !e.Permanent
	case ErrBatchTooLarge:
		return e.BatchTooLarge
	}
	return false
}

// vendorError is what a provider's error body says.
type vendorError struct {
	Code       string
	Message    string
	Permanent  bool          // even if the status is retryable (an exhausted quota)
	TooLarge   bool          // the request had too many texts or tokens
	RetryAfter time.Duration // from the body (Gemini's RetryInfo)
}

// httpClient posts JSON to one provider with retries. Its cool-down is
// shared by every request of the provider instance that owns it.
type httpClient struct {
	provider string
	cfg      HTTPConfig
	secret   string                                    // redacted from every message
	header   func(h http.Header)                       // sets authentication headers
	parse    func(status int, body []byte) vendorError // reads an error body

	mu        sync.Mutex
	notBefore time.Time // no request starts before it: a 429's Retry-After
}

func newHTTPClient(provider string, cfg HTTPConfig, secret string, header func(http.Header), parse func(int, []byte) vendorError) *httpClient {
	return &httpClient{provider: provider, cfg: cfg.withDefaults(), secret: secret, header: header, parse: parse}
}

// post sends in as JSON to url and decodes a 2xx answer into out, retrying
// what may succeed later. A body that does not decode is ErrBadVector.
func (c *httpClient) post(ctx context.Context, url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", c.provider, err)
	}
	var last *ProviderError
	for attempt := 0; ; attempt++ {
		if err := c.sleep(ctx, c.coolDown()); err != nil {
			return c.ctxError(err, last)
		}
		perr, err := c.attempt(ctx, url, body, out)
		if err != nil {
			return err
		}
		if perr == nil {
			return nil
		}
		last = perr
		if ctx.Err() != nil {
			return c.ctxError(ctx.Err(), last)
		}
		if perr.Permanent || attempt >= c.cfg.MaxRetries {
			return perr
		}
		wait := max(c.backoff(attempt), perr.RetryAfter)
		if perr.Status == http.StatusTooManyRequests && perr.RetryAfter > 0 {
			c.setCoolDown(time.Now().Add(perr.RetryAfter))
		}
		if err := c.sleep(ctx, wait); err != nil {
			return c.ctxError(err, last)
		}
	}
}

// attempt sends one request. It returns a *ProviderError for an answer or
// failure worth classifying, or an error that ends post at once.
func (c *httpClient) attempt(ctx context.Context, url string, body []byte, out any) (*ProviderError, error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: new request: %s", c.provider, c.redact(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.header != nil {
		c.header(req.Header)
	}
	start := time.Now()
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		c.observe(wireCode(ctx, rctx), start)
		return c.wireError(ctx, rctx, err), nil
	}
	defer resp.Body.Close()
	defer c.observe(statusCode(resp.StatusCode), start)
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return c.wireError(ctx, rctx, err), nil
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("%s: answer larger than %d bytes: %w", c.provider, maxResponseBytes, ErrBadVector)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			// json errors name types and offsets, not the body's text.
			return nil, fmt.Errorf("%s: decode answer: %s: %w", c.provider, c.redact(err.Error()), ErrBadVector)
		}
		return nil, nil
	}
	return c.statusError(resp.StatusCode, resp.Header, data), nil
}

// wireError describes a request that got no complete answer; it is
// retryable.
func (c *httpClient) wireError(ctx, rctx context.Context, err error) *ProviderError {
	msg := c.redact(err.Error())
	if ctx.Err() == nil && rctx.Err() != nil {
		msg = fmt.Sprintf("no answer within %v", c.cfg.Timeout)
	}
	return &ProviderError{Provider: c.provider, Message: msg}
}

// statusError classifies a non-2xx answer.
func (c *httpClient) statusError(status int, h http.Header, body []byte) *ProviderError {
	v := vendorError{}
	if c.parse != nil {
		v = c.parse(status, body)
	}
	if v.Message == "" {
		v.Message = strings.TrimSpace(string(body))
		if len(v.Message) > maxMessageBytes {
			v.Message = v.Message[:maxMessageBytes] + "..."
		}
		if v.Message == "" {
			v.Message = http.StatusText(status)
		}
	}
	e := &ProviderError{
		Provider:      c.provider,
		Status:        status,
		Code:          c.redact(v.Code),
		Message:       c.redact(v.Message),
		BatchTooLarge: v.TooLarge || status == http.StatusRequestEntityTooLarge,
		RetryAfter:    max(retryAfter(h, time.Now()), v.RetryAfter),
	}
	e.Permanent = !retryableStatus(status) || v.Permanent || e.BatchTooLarge
	return e
}

// retryableStatus reports whether an answer with status may succeed later.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		529: // overloaded
		return true
	}
	return false
}

// redact replaces the API key in s.
func (c *httpClient) redact(s string) string {
	if c.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, c.secret, "[redacted]")
}

// ctxError wraps the context's error and, when there was one, the last
// provider error, so both errors.Is(err, context.DeadlineExceeded) and
// errors.Is(err, ErrRateLimited) can hold.
func (c *httpClient) ctxError(err error, last *ProviderError) error {
	if last == nil {
		return fmt.Errorf("%s: %w", c.provider, err)
	}
	return fmt.Errorf("%w (last answer: %w)", err, last)
}

// backoff returns the full-jitter wait before retry attempt+1.
// Hand-written rather than github.com/cenkalti/backoff/v5: post waits the
// longer of this and a Retry-After or vendor reset header (sub-second
// durations), shares a 429's cool-down with the provider's concurrent
// requests, and keeps the last answer in the error when ctx ends; v5's
// RetryAfterError replaces the backoff (whole seconds through RetryAfter),
// and its Retry returns only context.Cause on cancel.
func (c *httpClient) backoff(attempt int) time.Duration {
	bound := c.cfg.MaxBackoff
	if attempt < 32 {
		if d := c.cfg.BaseBackoff << attempt; d > 0 && d < bound {
			bound = d
		}
	}
	return rand.N(bound + 1)
}

func (c *httpClient) coolDown() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Until(c.notBefore)
}

func (c *httpClient) setCoolDown(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.notBefore) {
		c.notBefore = t
	}
}

// sleep waits d, or fails at once when ctx would end first.
func (c *httpClient) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return fmt.Errorf("retry in %v is past the deadline: %w", d.Round(time.Millisecond), context.DeadlineExceeded)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryAfter reads how long an answer asks to wait: Retry-After (seconds or
// an HTTP date), retry-after-ms, or OpenAI's x-ratelimit-reset-requests and
// -tokens (durations like "1s" or "6m0s") of a limit whose remaining count
// is 0. It returns 0 when the answer does not say.
func retryAfter(h http.Header, now time.Time) time.Duration {
	var d time.Duration
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			d = time.Duration(s * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil {
			d = t.Sub(now)
		}
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			d = max(d, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	for _, limit := range []string{"requests", "tokens"} {
		if h.Get("X-Ratelimit-Remaining-"+limit) != "0" {
			continue
		}
		if r, err := time.ParseDuration(h.Get("X-Ratelimit-Reset-" + limit)); err == nil {
			d = max(d, r)
		}
	}
	return max(d, 0)
}

// tooLargeMessage reports whether a provider's message says a request had
// too many texts or tokens.
func tooLargeMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, p := range []string{
		"too many inputs", "max number of inputs", "maximum number of inputs",
		"too many tokens", "tokens per request", "maximum context length",
		"batch size", "per submitted batch", "requests can be in one batch",
		"too large", "payload size exceeds",
	} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// jsonText returns a JSON string's value, or the compact JSON of any other
// value, or "" for null or nothing.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// baseURL parses a provider base URL, dropping a trailing "/" and, when
// trimV1, a trailing "/v1".
func baseURL(raw, def string, trimV1 bool) (string, error) {
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base url %q is not an http(s) url: %w", raw, ErrInvalidConfig)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base url %q has a query or fragment: %w", raw, ErrInvalidConfig)
	}
	s := strings.TrimRight(raw, "/")
	if trimV1 {
		s = strings.TrimRight(strings.TrimSuffix(s, "/v1"), "/")
	}
	return s, nil
}

// limits bound one request of a provider.
type limits struct {
	items  int // texts per request
	tokens int // estimated tokens per request; 0 means no bound
}

// estimateTokens estimates the model tokens of s like chunker.EstimateTokens,
// without importing it: one per 4 bytes, plus one per rune past U+1100
// (CJK, kana, hangul), so it errs on the high side for non-Latin scripts.
func estimateTokens(s string) int {
	n := (len(s) + 3) / 4
	for _, r := range s {
		if r >= 0x1100 {
			n++
		}
	}
	return n
}

// sendFunc embeds texts with one request (and its retries), returning
// checked, normalised vectors in order.
type sendFunc func(ctx context.Context, texts []string) ([][]float32, error)

// embedBatches embeds texts in consecutive batches within l, one request
// at a time, halving a batch the provider rejects as too large.
func embedBatches(ctx context.Context, texts []string, l limits, send sendFunc) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for lo := 0; lo < len(texts); {
		hi, tokens := lo, 0
		for hi < len(texts) && hi-lo < l.items {
			t := estimateTokens(texts[hi])
			if l.tokens > 0 && hi > lo && tokens+t > l.tokens {
				break
			}
			tokens += t
			hi++
		}
		vecs, err := splitTooLarge(ctx, texts[lo:hi:hi], lo, send)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
		lo = hi
	}
	return out, nil
}

// splitTooLarge embeds texts, which start at index offset of the request,
// with send; when the provider says the batch is too large it embeds each
// half the same way, down to one text, which then fails naming its index.
func splitTooLarge(ctx context.Context, texts []string, offset int, send sendFunc) ([][]float32, error) {
	vecs, err := send(ctx, texts)
	if err == nil || !errors.Is(err, ErrBatchTooLarge) {
		return vecs, err
	}
	if len(texts) == 1 {
		return nil, fmt.Errorf("text %d is too large to embed: %w", offset, err)
	}
	mid := len(texts) / 2
	a, err := splitTooLarge(ctx, texts[:mid:mid], offset, send)
	if err != nil {
		return nil, err
	}
	b, err := splitTooLarge(ctx, texts[mid:], offset+mid, send)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// indexed is one vector of an answer that numbers them.
type indexed struct {
	Index     *int      `json:"index"`
	Embedding []float32 `json:"embedding"`
}

// byIndex puts the vectors of an answer to n texts in input order; a
// missing, duplicate or out-of-range index is ErrBadVector.
func byIndex(data []indexed, n int) ([][]float32, error) {
	if len(data) != n {
		return nil, fmt.Errorf("got %d vectors for %d texts: %w", len(data), n, ErrBadVector)
	}
	out := make([][]float32, n)
	for i, d := range data {
		switch {
		case d.Index == nil:
			return nil, fmt.Errorf("vector %d has no index: %w", i, ErrBadVector)
		case *d.Index < 0 || *d.Index >= n:
			return nil, fmt.Errorf("vector %d has index %d, want 0..%d: %w", i, *d.Index, n-1, ErrBadVector)
		case out[*d.Index] != nil:
			return nil, fmt.Errorf("index %d appears twice: %w", *d.Index, ErrBadVector)
		}
		out[*d.Index] = d.Embedding
	}
	return out, nil
}

// finish checks the vectors of n texts and normalises them in place.
func finish(provider string, vecs [][]float32, n, dims int) ([][]float32, error) {
	if err := CheckVectors(vecs, n, dims); err != nil {
		return nil, fmt.Errorf("%s: %w", provider, err)
	}
	for _, v := range vecs {
		Normalize(v)
	}
	return vecs, nil
}
