package embedder

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

var mistralAPI = api{
	name:    "mistral",
	indexed: true,
	build: func(base, key string, maxBatch int, hc HTTPConfig) (Embedder, error) {
		return NewMistral(MistralConfig{APIKey: key, BaseURL: base, Model: "test-embed", Dims: testDims, MaxBatch: maxBatch, HTTP: hc})
	},
	texts: func(t testing.TB, r *http.Request, body []byte) []string {
		checkPost(t, r, "/v1/embeddings")
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization=%q, want the bearer key", got)
		}
		m := decodeBody(t, body)
		if m["model"] != "test-embed" || len(m) != 2 {
			t.Errorf("request body %v, want only model test-embed and input", m)
		}
		return stringList(m["input"])
	},
	answer: func(w http.ResponseWriter, vecs []string, idx []int) {
		items := make([]string, len(vecs))
		for i, v := range vecs {
			items[i] = fmt.Sprintf(`{"object":"embedding","embedding":%s,"index":%d}`, v, idx[i])
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"e1","object":"list","data":[%s],"model":"test-embed","usage":{"prompt_tokens":8,"total_tokens":8,"completion_tokens":0}}`, strings.Join(items, ","))
	},
	fail: func(w http.ResponseWriter, status int, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusUnauthorized || status == http.StatusTooManyRequests {
			fmt.Fprintf(w, `{"message":%q,"request_id":"r1"}`, message)
			return
		}
		fmt.Fprintf(w, `{"object":"error","message":%q,"type":"service_unavailable","param":null,"code":"1000"}`, message)
	},
	tooLarge: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"object":"error","message":"Too many tokens overall, split into more batches.","type":"invalid_request_prompt","param":null,"code":"3210"}`)
	},
}

func TestMistralRequest(t *testing.T) {
	texts := []any{"hello", "world"}
	runRequestCases(t, mistralAPI, []requestCase{
		{
			name: "defaults",
			build: func(base string) (Embedder, error) {
				return NewMistral(MistralConfig{APIKey: testKey, BaseURL: base})
			},
			kind:     KindQuery,
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "mistral-embed", "input": texts},
			wantInfo: Info{Provider: "mistral", Model: "mistral-embed", Dims: 1024},
			dims:     1024,
		},
		{
			name: "codestral-embed shortened",
			build: func(base string) (Embedder, error) {
				return NewMistral(MistralConfig{APIKey: testKey, BaseURL: base + "/v1", Model: "codestral-embed", Dims: 256})
			},
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "codestral-embed", "input": texts, "output_dimension": float64(256)},
			wantInfo: Info{Provider: "mistral", Model: "codestral-embed", Dims: 256},
			dims:     256,
		},
	})
}

func TestMistralValidate(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"key and defaults", MistralConfig{APIKey: "k"}, true},
		{"no key for the real api", MistralConfig{}, false},
		{"no key for another server", MistralConfig{BaseURL: "http://localhost:8080"}, true},
		{"mistral-embed is fixed", MistralConfig{APIKey: "k", Dims: 512}, false},
		{"codestral up to 3072", MistralConfig{APIKey: "k", Model: "codestral-embed", Dims: 3072}, true},
		{"codestral past 3072", MistralConfig{APIKey: "k", Model: "codestral-embed", Dims: 4096}, false},
		{"unknown model without dims", MistralConfig{APIKey: "k", Model: "x"}, false},
	})
}

func TestMistralErrors(t *testing.T) {
	build := func(base string) (Embedder, error) {
		return NewMistral(MistralConfig{APIKey: testKey, BaseURL: base, HTTP: fastHTTP()})
	}
	calls, err := errorCase(t, build, 400, `{"object":"error","message":"Too many tokens in batch. Max is 16384 got 17555","type":"invalid_request_error","param":null,"code":null}`)
	if !errors.Is(err, ErrBatchTooLarge) || calls != 2 || !strings.Contains(err.Error(), "text 0") {
		t.Fatalf("Embed()=%v after %d requests, want ErrBatchTooLarge naming text 0 after 2", err, calls)
	}
	calls, err = errorCase(t, build, 422, `{"object":"error","message":{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required"}]},"type":"invalid_request_error","param":null,"code":null}`)
	if !errors.Is(err, ErrPermanent) || calls != 1 || !strings.Contains(err.Error(), "Field required") {
		t.Fatalf("Embed()=%v after %d requests, want a permanent error with the detail after 1", err, calls)
	}
}
