package embedder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is the API key of the fake servers; errors must never show it.
const testKey = "sk-test-SECRET-0123456789"

// testDims is the vector length every provider is built with in the
// shared tests.
const testDims = 4

// api describes one provider's wire format to the shared tests, which run
// for every provider against a fake server that speaks it.
type api struct {
	name    string
	indexed bool // answers carry an index per vector
	keyless bool // sends no API key
	// build returns the provider for model "test-embed" of testDims dims at
	// base, sending key, with at most maxBatch texts a request.
	build func(base, key string, maxBatch int, hc HTTPConfig) (Embedder, error)
	// texts checks that r is the request the vendor documents and returns
	// its texts.
	texts func(t testing.TB, r *http.Request, body []byte) []string
	// answer writes a 200 answer with the given JSON vectors; idx gives
	// their indexes where the format has them.
	answer func(w http.ResponseWriter, vecs []string, idx []int)
	// fail writes the vendor's error answer.
	fail func(w http.ResponseWriter, status int, message string)
	// tooLarge writes the vendor's answer to a batch with too many texts.
	tooLarge func(w http.ResponseWriter)
}

var testAPIs = []api{openAIAPI, mistralAPI, voyageAPI, ollamaAPI, geminiAPI}

// testVector is the JSON vector of text "t<i>": its first two components
// have the ratio i+1, which survives normalisation.
func testVector(text string) string {
	i, err := strconv.Atoi(strings.TrimPrefix(text, "t"))
	if err != nil {
		i = 99
	}
	return fmt.Sprintf("[%d,1,0.5,0]", i+1)
}

// textOf returns i of the text "t<i>" whose vector v is.
func textOf(v []float32) int { return int(math.Round(float64(v[0]/v[1]))) - 1 }

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "t" + strconv.Itoa(i)
	}
	return out
}

// call is one request the fake server got.
type call struct {
	at    time.Time
	texts []string
}

// fake is a provider's server. handle answers call n (from 0) and returns
// true, or returns false to have the texts' vectors answered in reverse
// index order.
type fake struct {
	api    api
	srv    *httptest.Server
	handle func(n int, texts []string, w http.ResponseWriter, r *http.Request) bool

	mu    sync.Mutex
	calls []call
}

func newFake(t testing.TB, a api, handle func(n int, texts []string, w http.ResponseWriter, r *http.Request) bool) *fake {
	t.Helper()
	f := &fake{api: a, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read request: %v", err)
			return
		}
		got := a.texts(t, r, body)
		f.mu.Lock()
		n := len(f.calls)
		f.calls = append(f.calls, call{at: time.Now(), texts: got})
		f.mu.Unlock()
		if f.handle != nil && f.handle(n, got, w, r) {
			return
		}
		f.ok(w, got)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// ok answers the vectors of texts, listed in reverse so that indexes must
// be used.
func (f *fake) ok(w http.ResponseWriter, texts []string) {
	vecs, idx := make([]string, len(texts)), make([]int, len(texts))
	for i := range texts {
		j := i
		if f.api.indexed {
			j = len(texts) - 1 - i
		}
		vecs[i], idx[i] = testVector(texts[j]), j
	}
	f.api.answer(w, vecs, idx)
}

func (f *fake) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// fastHTTP retries quickly.
func fastHTTP() HTTPConfig {
	return HTTPConfig{Timeout: 5 * time.Second, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

func mustBuild(t testing.TB, f *fake, maxBatch int, hc HTTPConfig) Embedder {
	t.Helper()
	e, err := f.api.build(f.srv.URL, testKey, maxBatch, hc)
	if err != nil {
		t.Fatalf("build %s: %v", f.api.name, err)
	}
	return e
}

// checkOrder fails unless vecs are the unit vectors of texts "t0".."tn-1".
func checkOrder(t testing.TB, vecs [][]float32, n int) {
	t.Helper()
	if len(vecs) != n {
		t.Fatalf("got %d vectors, want %d", len(vecs), n)
	}
	for i, v := range vecs {
		if got := textOf(v); got != i {
			t.Fatalf("vector %d belongs to text %d, want %d", i, got, i)
		}
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("vector %d has squared norm %v, want 1", i, sum)
		}
	}
}

func TestProvidersBatchOrder(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, nil)
			e := mustBuild(t, f, 3, fastHTTP())
			vecs, err := e.Embed(context.Background(), Request{Texts: texts(10), Kind: KindDocument})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			checkOrder(t, vecs, 10)
			var sizes []int
			for _, c := range f.Calls() {
				sizes = append(sizes, len(c.texts))
			}
			if got, want := fmt.Sprint(sizes), "[3 3 3 1]"; got != want {
				t.Fatalf("batch sizes=%s, want %s", got, want)
			}
			if got, err := e.Embed(context.Background(), Request{}); err != nil || len(got) != 0 {
				t.Fatalf("Embed(no texts)=%v, %v, want no vectors and no error", got, err)
			}
		})
	}
}

func TestProvidersSplitTooLarge(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(_ int, texts []string, w http.ResponseWriter, _ *http.Request) bool {
				if len(texts) > 2 {
					a.tooLarge(w)
					return true
				}
				return false
			})
			vecs, err := mustBuild(t, f, 100, fastHTTP()).Embed(context.Background(), Request{Texts: texts(7)})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			checkOrder(t, vecs, 7)
			// 7 → 3+4 → (1+2)+(2+2): 7 requests, 3 of them rejected.
			if got := len(f.Calls()); got != 7 {
				t.Fatalf("server got %d requests, want 7", got)
			}
		})
		t.Run(a.name+"/one text too large", func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(_ int, texts []string, w http.ResponseWriter, _ *http.Request) bool {
				for _, s := range texts {
					if s == "t5" {
						a.tooLarge(w)
						return true
					}
				}
				return false
			})
			_, err := mustBuild(t, f, 100, fastHTTP()).Embed(context.Background(), Request{Texts: texts(8)})
			if !errors.Is(err, ErrPermanent) || !errors.Is(err, ErrBatchTooLarge) || !strings.Contains(err.Error(), "text 5") {
				t.Fatalf("Embed()=%v, want a permanent too-large error naming text 5", err)
			}
		})
	}
}

func TestProvidersRetryAfter(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(n int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
				if n == 0 {
					w.Header().Set("Retry-After", "2")
					a.fail(w, http.StatusTooManyRequests, "rate limit reached")
					return true
				}
				return false
			})
			// BaseBackoff is tiny: only Retry-After can make the wait 2s.
			vecs, err := mustBuild(t, f, 0, fastHTTP()).Embed(context.Background(), Request{Texts: texts(2)})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			checkOrder(t, vecs, 2)
			calls := f.Calls()
			if len(calls) != 2 {
				t.Fatalf("server got %d requests, want 2", len(calls))
			}
			if gap := calls[1].at.Sub(calls[0].at); gap < 2*time.Second {
				t.Fatalf("retry came %v after the 429, want >= 2s", gap)
			}
		})
	}
}

func TestProvidersRateLimitedBounded(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(_ int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
				a.fail(w, http.StatusTooManyRequests, "rate limit reached")
				return true
			})
			hc := fastHTTP()
			hc.MaxRetries = 3
			_, err := mustBuild(t, f, 0, hc).Embed(context.Background(), Request{Texts: texts(2)})
			if !errors.Is(err, ErrRateLimited) || errors.Is(err, ErrPermanent) {
				t.Fatalf("Embed()=%v, want ErrRateLimited and not ErrPermanent", err)
			}
			if got := len(f.Calls()); got != 4 {
				t.Fatalf("server got %d requests, want 1+MaxRetries=4", got)
			}
		})
	}
}

func TestProvidersUnavailableBurst(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(n int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
				if n < 3 {
					a.fail(w, http.StatusServiceUnavailable, "overloaded")
					return true
				}
				return false
			})
			vecs, err := mustBuild(t, f, 0, fastHTTP()).Embed(context.Background(), Request{Texts: texts(3)})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			checkOrder(t, vecs, 3)
			if got := len(f.Calls()); got != 4 {
				t.Fatalf("server got %d requests, want 4", got)
			}
		})
	}
}

func TestProvidersHungConnection(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(n int, _ []string, _ http.ResponseWriter, r *http.Request) bool {
				if n == 0 {
					<-r.Context().Done() // hang until the client gives up
					return true
				}
				return false
			})
			hc := fastHTTP()
			hc.Timeout = 200 * time.Millisecond
			start := time.Now()
			vecs, err := mustBuild(t, f, 0, hc).Embed(context.Background(), Request{Texts: texts(2)})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			checkOrder(t, vecs, 2)
			calls := f.Calls()
			if len(calls) != 2 {
				t.Fatalf("server got %d requests, want 2", len(calls))
			}
			if gap := calls[1].at.Sub(calls[0].at); gap < hc.Timeout*3/4 || gap > hc.Timeout+time.Second { // arrival is recorded after the client starts its clock
				t.Fatalf("retry came %v after the hung request, want about the %v timeout", gap, hc.Timeout)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("Embed took %v, want about the timeout", d)
			}
		})
	}
}

func TestProvidersUnauthorized(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(_ int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
				a.fail(w, http.StatusUnauthorized, "Incorrect API key provided: "+testKey+".")
				return true
			})
			_, err := mustBuild(t, f, 0, fastHTTP()).Embed(context.Background(), Request{Texts: texts(2)})
			if !errors.Is(err, ErrPermanent) {
				t.Fatalf("Embed()=%v, want ErrPermanent", err)
			}
			if !a.keyless && (strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), testKey)) {
				t.Fatalf("error shows the key: %v", err)
			}
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized {
				t.Fatalf("Embed()=%v, want a *ProviderError with status 401", err)
			}
			if got := len(f.Calls()); got != 1 {
				t.Fatalf("server got %d requests, want 1", got)
			}
		})
	}
}

func TestProvidersCorruptAnswers(t *testing.T) {
	good := testVector("t0")
	tests := []struct {
		name    string
		vecs    []string
		idx     []int
		indexed bool // only for formats with indexes
	}{
		{"too few vectors", []string{good}, []int{0}, false},
		{"too many vectors", []string{good, good, good}, []int{0, 1, 2}, false},
		{"wrong dims", []string{good, "[1,2,3]"}, []int{0, 1}, false},
		{"overflows float32", []string{good, "[1e39,1,1,1]"}, []int{0, 1}, false},
		{"all zero", []string{good, "[0,0,0,0]"}, []int{0, 1}, false},
		{"not numbers", []string{good, `["a",1,1,1]`}, []int{0, 1}, false},
		{"duplicate index", []string{good, good}, []int{1, 1}, true},
		{"index out of range", []string{good, good}, []int{0, 2}, true},
	}
	for _, a := range testAPIs {
		for _, tt := range tests {
			if tt.indexed && !a.indexed {
				continue
			}
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, a, func(_ int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
					a.answer(w, tt.vecs, tt.idx)
					return true
				})
				got, err := mustBuild(t, f, 0, fastHTTP()).Embed(context.Background(), Request{Texts: texts(2)})
				if !errors.Is(err, ErrBadVector) || got != nil {
					t.Fatalf("Embed()=%v, %v, want no vectors and ErrBadVector", got, err)
				}
				if n := len(f.Calls()); n != 1 {
					t.Fatalf("server got %d requests, want 1 (bad answers are not retried)", n)
				}
			})
		}
		t.Run(a.name+"/not json", func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(_ int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
				io.WriteString(w, "<html>gateway</html>")
				return true
			})
			_, err := mustBuild(t, f, 0, fastHTTP()).Embed(context.Background(), Request{Texts: texts(2)})
			if !errors.Is(err, ErrBadVector) {
				t.Fatalf("Embed()=%v, want ErrBadVector", err)
			}
		})
	}
}

func TestProvidersDeadline(t *testing.T) {
	for _, a := range testAPIs {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, a, func(_ int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Retry-After", "30")
				a.fail(w, http.StatusServiceUnavailable, "down for maintenance")
				return true
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := mustBuild(t, f, 0, fastHTTP()).Embed(ctx, Request{Texts: texts(2)})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Embed()=%v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("Embed took %v, want it to give up at once on a retry past the deadline", d)
			}
			if !strings.Contains(err.Error(), "down for maintenance") {
				t.Fatalf("Embed()=%v, want the last answer's message", err)
			}
		})
	}
}

// TestCoolDownShared checks that a 429's Retry-After holds back the other
// requests of the same provider: a second Embed started during the
// cool-down sends nothing before it ends.
func TestCoolDownShared(t *testing.T) {
	f := newFake(t, openAIAPI, func(n int, _ []string, w http.ResponseWriter, _ *http.Request) bool {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			openAIAPI.fail(w, http.StatusTooManyRequests, "rate limit reached")
			return true
		}
		return false
	})
	o := mustBuild(t, f, 0, fastHTTP()).(*OpenAI)
	errs := make(chan error, 2)
	go func() {
		_, err := o.Embed(context.Background(), Request{Texts: texts(1)})
		errs <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for o.http.coolDown() <= 0 {
		if time.Now().After(deadline) {
			t.Fatal("no cool-down set within 5s of a 429 with Retry-After")
		}
		time.Sleep(time.Millisecond)
	}
	until := time.Now().Add(o.http.coolDown())
	go func() {
		_, err := o.Embed(context.Background(), Request{Texts: texts(2)})
		errs <- err
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Embed: %v", err)
		}
	}
	calls := f.Calls()
	if len(calls) != 3 {
		t.Fatalf("server got %d requests, want 3", len(calls))
	}
	for i, c := range calls[1:] {
		if c.at.Before(until.Add(-10 * time.Millisecond)) {
			t.Fatalf("request %d came %v before the cool-down ended", i+1, until.Sub(c.at))
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"milliseconds", map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"openai requests exhausted", map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "20ms"}, 20 * time.Millisecond},
		{"openai tokens exhausted", map[string]string{"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "6m0s"}, 6 * time.Minute},
		{"openai reset of a limit not exhausted", map[string]string{"X-Ratelimit-Remaining-Tokens": "10", "X-Ratelimit-Reset-Tokens": "6m0s"}, 0},
		{"longest wins", map[string]string{"Retry-After": "1", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "3s"}, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Fatalf("retryAfter(%v)=%v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestBackoffFullJitter(t *testing.T) {
	c := newHTTPClient("test", HTTPConfig{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}, "", nil, nil)
	for attempt, bound := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		bound *= time.Millisecond
		for range 200 {
			if d := c.backoff(attempt); d < 0 || d > bound {
				t.Fatalf("backoff(%d)=%v, want 0..%v", attempt, d, bound)
			}
		}
	}
	if d := c.backoff(1000); d < 0 || d > time.Second {
		t.Fatalf("backoff(1000)=%v, want 0..1s", d)
	}
}

func TestHTTPConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  HTTPConfig
		ok   bool
	}{
		{"zero takes defaults", HTTPConfig{}, true},
		{"no retries", HTTPConfig{MaxRetries: -1}, true},
		{"negative timeout", HTTPConfig{Timeout: -1}, false},
		{"negative base backoff", HTTPConfig{BaseBackoff: -1}, false},
		{"negative max backoff", HTTPConfig{MaxBackoff: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("Validate(%+v)=%v, want ok=%v", tt.cfg, err, tt.ok)
			}
		})
	}
	d := HTTPConfig{MaxRetries: -1}.withDefaults()
	if d.MaxRetries != 0 || d.Timeout != defaultHTTPTimeout || d.Client == nil {
		t.Fatalf("withDefaults()=%+v, want 0 retries, the default timeout and a client", d)
	}
}

func TestProviderErrorIs(t *testing.T) {
	tests := []struct {
		name                         string
		err                          *ProviderError
		permanent, limited, tooLarge bool
	}{
		{"unavailable", &ProviderError{Status: 503}, false, false, false},
		{"rate limited", &ProviderError{Status: 429}, false, true, false},
		{"quota", &ProviderError{Status: 429, Permanent: true}, true, false, false},
		{"too large", &ProviderError{Status: 413, Permanent: true, BatchTooLarge: true}, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", tt.err)
			if got := errors.Is(err, ErrPermanent); got != tt.permanent {
				t.Fatalf("Is(ErrPermanent)=%v, want %v", got, tt.permanent)
			}
			if got := errors.Is(err, ErrRateLimited); got != tt.limited {
				t.Fatalf("Is(ErrRateLimited)=%v, want %v", got, tt.limited)
			}
			if got := errors.Is(err, ErrBatchTooLarge); got != tt.tooLarge {
				t.Fatalf("Is(ErrBatchTooLarge)=%v, want %v", got, tt.tooLarge)
			}
		})
	}
}

func TestEmbedBatchesTokenLimit(t *testing.T) {
	in := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 80), "d", strings.Repeat("e", 400)}
	var sizes []int
	send := func(_ context.Context, texts []string) ([][]float32, error) {
		sizes = append(sizes, len(texts))
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = []float32{1}
		}
		return out, nil
	}
	// 10+10 tokens fit 25; 20+1 fit; 100 alone exceeds it but goes alone.
	vecs, err := embedBatches(context.Background(), in, limits{items: 10, tokens: 25}, send)
	if err != nil || len(vecs) != len(in) {
		t.Fatalf("embedBatches()=%d vectors, %v, want %d", len(vecs), err, len(in))
	}
	if got, want := fmt.Sprint(sizes), "[2 2 1]"; got != want {
		t.Fatalf("batch sizes=%s, want %s", got, want)
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"日本", 4}, // 6 bytes → 2, plus one per CJK rune
	}
	for _, tt := range tests {
		if got := estimateTokens(tt.in); got != tt.want {
			t.Fatalf("estimateTokens(%q)=%d, want %d", tt.in, got, tt.want)
		}
	}
}

// decodeBody decodes a JSON request body for comparison with a want map.
func decodeBody(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Errorf("request body is not a JSON object: %v", err)
	}
	return m
}

// checkPost checks the method, path and content type shared by every
// provider's request.
func checkPost(t testing.TB, r *http.Request, path string) {
	t.Helper()
	if r.Method != http.MethodPost || r.URL.Path != path {
		t.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, path)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type=%q, want application/json", got)
	}
}

// stringList converts a decoded JSON array of strings.
func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, x := range list {
		out[i], _ = x.(string)
	}
	return out
}

// unitVectors returns n JSON vectors of dims components.
func unitVectors(n, dims int) []string {
	out := make([]string, n)
	for i := range out {
		parts := make([]string, dims)
		for j := range parts {
			parts[j] = strconv.Itoa(i + j + 1)
		}
		out[i] = "[" + strings.Join(parts, ",") + "]"
	}
	return out
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// requestCase is one exact-request check of a provider.
type requestCase struct {
	name     string
	build    func(base string) (Embedder, error)
	kind     Kind
	path     string
	header   map[string]string // "" means the header must be absent
	wantBody map[string]any    // with "input" or "requests" as sent for texts(2)
	wantInfo Info              // BaseURL is checked to be the server's
	dims     int               // length of the vectors to answer
}

// runRequestCases embeds two texts with each case's provider and checks
// the request the server got.
func runRequestCases(t *testing.T, a api, cases []requestCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			var calls int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls++
				checkPost(t, r, tt.path)
				for k, want := range tt.header {
					if v := r.Header.Get(k); v != want {
						t.Errorf("header %s=%q, want %q", k, v, want)
					}
				}
				body, _ := io.ReadAll(r.Body)
				got = decodeBody(t, body)
				a.answer(w, unitVectors(2, tt.dims), seq(2))
			}))
			defer srv.Close()
			e, err := tt.build(srv.URL)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			vecs, err := e.Embed(context.Background(), Request{Texts: []string{"hello", "world"}, Kind: tt.kind})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(vecs) != 2 || len(vecs[0]) != tt.dims {
				t.Fatalf("Embed returned %d vectors of %d, want 2 of %d", len(vecs), len(vecs[0]), tt.dims)
			}
			if calls != 1 {
				t.Fatalf("server got %d requests, want 1", calls)
			}
			if !reflect.DeepEqual(got, tt.wantBody) {
				t.Fatalf("request body=%v, want %v", got, tt.wantBody)
			}
			want := tt.wantInfo
			want.BaseURL = srv.URL
			if info := e.Info(); info != want {
				t.Fatalf("Info()=%+v, want %+v", info, want)
			}
		})
	}
}

// runValidateCases checks a provider's Validate.
func runValidateCases(t *testing.T, cases []validateCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("Validate(%+v)=%v, want ok=%v", tt.cfg, err, tt.ok)
			}
		})
	}
}

// validateCase is one case of runValidateCases.
type validateCase struct {
	name string
	cfg  interface{ Validate() error }
	ok   bool
}

// errorCase runs one Embed against a server answering status and body,
// returning the number of requests and the error.
func errorCase(t *testing.T, build func(base string) (Embedder, error), status int, body string) (int, error) {
	t.Helper()
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	e, err := build(srv.URL)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	_, err = e.Embed(context.Background(), Request{Texts: texts(2)})
	mu.Lock()
	defer mu.Unlock()
	return calls, err
}
