package embedder

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var geminiAPI = api{
	name: "gemini",
	build: func(base, key string, maxBatch int, hc HTTPConfig) (Embedder, error) {
		return NewGemini(GeminiConfig{APIKey: key, BaseURL: base, Model: "test-embed", Dims: testDims, MaxBatch: maxBatch, HTTP: hc})
	},
	texts: func(t testing.TB, r *http.Request, body []byte) []string {
		checkPost(t, r, "/v1beta/models/test-embed:batchEmbedContents")
		if got := r.Header.Get("x-goog-api-key"); got != testKey {
			t.Errorf("x-goog-api-key=%q, want the key", got)
		}
		if r.URL.RawQuery != "" {
			t.Errorf("query %q, want none (the key goes in a header)", r.URL.RawQuery)
		}
		var out []string
		for _, req := range decodeBody(t, body)["requests"].([]any) {
			m := req.(map[string]any)
			if m["model"] != "models/test-embed" || m["taskType"] != "RETRIEVAL_DOCUMENT" || m["outputDimensionality"] != float64(testDims) {
				t.Errorf("request %v, want model models/test-embed, taskType RETRIEVAL_DOCUMENT, outputDimensionality %d", m, testDims)
			}
			part := m["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
			out = append(out, part["text"].(string))
		}
		return out
	},
	answer: func(w http.ResponseWriter, vecs []string, _ []int) {
		items := make([]string, len(vecs))
		for i, v := range vecs {
			items[i] = fmt.Sprintf(`{"values":%s}`, v)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"embeddings":[%s]}`, strings.Join(items, ","))
	},
	fail: func(w http.ResponseWriter, status int, message string) {
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q}}`, status, message, st)
	},
	tooLarge: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":400,"message":"* BatchEmbedContentsRequest.requests: at most 2 requests can be in one batch\n","status":"INVALID_ARGUMENT"}}`)
	},
}

func TestGeminiRequest(t *testing.T) {
	req := func(text, task string, dims int) map[string]any {
		return map[string]any{
			"model":                "models/gemini-embedding-001",
			"content":              map[string]any{"parts": []any{map[string]any{"text": text}}},
			"taskType":             task,
			"outputDimensionality": float64(dims),
		}
	}
	runRequestCases(t, geminiAPI, []requestCase{
		{
			name: "defaults, documents",
			build: func(base string) (Embedder, error) {
				return NewGemini(GeminiConfig{APIKey: testKey, BaseURL: base})
			},
			kind:     KindDocument,
			path:     "/v1beta/models/gemini-embedding-001:batchEmbedContents",
			header:   map[string]string{"x-goog-api-key": testKey, "Authorization": ""},
			wantBody: map[string]any{"requests": []any{req("hello", "RETRIEVAL_DOCUMENT", 768), req("world", "RETRIEVAL_DOCUMENT", 768)}},
			wantInfo: Info{Provider: "gemini", Model: "gemini-embedding-001", Dims: 768},
			dims:     768,
		},
		{
			name: "queries, full size, models/ prefix",
			build: func(base string) (Embedder, error) {
				return NewGemini(GeminiConfig{APIKey: testKey, BaseURL: base, Model: "models/gemini-embedding-001", Dims: 3072})
			},
			kind:     KindQuery,
			path:     "/v1beta/models/gemini-embedding-001:batchEmbedContents",
			header:   map[string]string{"x-goog-api-key": testKey},
			wantBody: map[string]any{"requests": []any{req("hello", "RETRIEVAL_QUERY", 3072), req("world", "RETRIEVAL_QUERY", 3072)}},
			wantInfo: Info{Provider: "gemini", Model: "gemini-embedding-001", Dims: 3072},
			dims:     3072,
		},
	})
}

func TestGeminiValidate(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"key and defaults", GeminiConfig{APIKey: "k"}, true},
		{"no key", GeminiConfig{}, false},
		{"past native", GeminiConfig{APIKey: "k", Dims: 4096}, false},
		{"batch past the api", GeminiConfig{APIKey: "k", MaxBatch: 101}, false},
		{"model with a path", GeminiConfig{APIKey: "k", Model: "a/b"}, false},
		{"unknown model without dims", GeminiConfig{APIKey: "k", Model: "x"}, false},
	})
}

func TestGeminiErrors(t *testing.T) {
	build := func(base string) (Embedder, error) {
		hc := fastHTTP()
		hc.MaxRetries = -1
		return NewGemini(GeminiConfig{APIKey: testKey, BaseURL: base, HTTP: hc})
	}
	calls, err := errorCase(t, build, 429, `{"error":{"code":429,"message":"Quota exceeded for metric: generativelanguage.googleapis.com/embed_content_free_tier_requests","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"m","quotaId":"EmbedContentRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`)
	var pe *ProviderError
	if !errors.As(err, &pe) || !pe.Permanent || pe.Code != "RESOURCE_EXHAUSTED" || pe.RetryAfter != 37*time.Second || calls != 1 {
		t.Fatalf("Embed()=%#v after %d requests, want a permanent RESOURCE_EXHAUSTED with RetryAfter 37s after 1", err, calls)
	}
	calls, err = errorCase(t, build, 403, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`)
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "PERMISSION_DENIED") || calls != 1 {
		t.Fatalf("Embed()=%v after %d requests, want a permanent PERMISSION_DENIED after 1", err, calls)
	}
}
