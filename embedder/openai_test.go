package embedder

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

var openAIAPI = api{
	name:    "openai",
	indexed: true,
	build: func(base, key string, maxBatch int, hc HTTPConfig) (Embedder, error) {
		return NewOpenAI(OpenAIConfig{APIKey: key, BaseURL: base, Model: "test-embed", Dims: testDims, MaxBatch: maxBatch, HTTP: hc})
	},
	texts: func(t testing.TB, r *http.Request, body []byte) []string {
		checkPost(t, r, "/v1/embeddings")
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization=%q, want the bearer key", got)
		}
		m := decodeBody(t, body)
		if m["model"] != "test-embed" || m["encoding_format"] != "float" {
			t.Errorf("request body %v, want model test-embed and encoding_format float", m)
		}
		return stringList(m["input"])
	},
	answer: func(w http.ResponseWriter, vecs []string, idx []int) {
		items := make([]string, len(vecs))
		for i, v := range vecs {
			items[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, idx[i], v)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[%s],"model":"test-embed","usage":{"prompt_tokens":8,"total_tokens":8}}`, strings.Join(items, ","))
	},
	fail: func(w http.ResponseWriter, status int, message string) {
		typ := map[int]string{401: "invalid_request_error", 429: "requests"}[status]
		if typ == "" {
			typ = "server_error"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, message, typ)
	},
	tooLarge: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"Requested 310000 tokens, max 300000 tokens per request","type":"max_tokens_per_request","param":null,"code":"max_tokens_per_request"}}`)
	},
}

func TestOpenAIRequest(t *testing.T) {
	texts := []any{"hello", "world"}
	runRequestCases(t, openAIAPI, []requestCase{
		{
			name: "defaults",
			build: func(base string) (Embedder, error) {
				return NewOpenAI(OpenAIConfig{APIKey: testKey, BaseURL: base})
			},
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "text-embedding-3-small", "input": texts, "encoding_format": "float"},
			wantInfo: Info{Provider: "openai", Model: "text-embedding-3-small", Dims: 1536},
			dims:     1536,
		},
		{
			name: "shortened text-embedding-3-large, base url with /v1",
			build: func(base string) (Embedder, error) {
				return NewOpenAI(OpenAIConfig{APIKey: testKey, BaseURL: base + "/v1/", Model: "text-embedding-3-large", Dims: 256})
			},
			kind:     KindQuery,
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "text-embedding-3-large", "input": texts, "encoding_format": "float", "dimensions": float64(256)},
			wantInfo: Info{Provider: "openai", Model: "text-embedding-3-large", Dims: 256},
			dims:     256,
		},
		{
			name: "local server without a key",
			build: func(base string) (Embedder, error) {
				return NewOpenAI(OpenAIConfig{BaseURL: base + "/v1", Model: "nomic-embed-text-v1.5", Dims: 8})
			},
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": ""},
			wantBody: map[string]any{"model": "nomic-embed-text-v1.5", "input": texts, "encoding_format": "float"},
			wantInfo: Info{Provider: "openai", Model: "nomic-embed-text-v1.5", Dims: 8},
			dims:     8,
		},
	})
}

func TestOpenAIValidate(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"zero takes defaults", OpenAIConfig{}, true},
		{"shortened", OpenAIConfig{Model: "text-embedding-3-small", Dims: 512}, true},
		{"longer than native", OpenAIConfig{Model: "text-embedding-3-small", Dims: 2048}, false},
		{"ada cannot shorten", OpenAIConfig{Model: "text-embedding-ada-002", Dims: 512}, false},
		{"unknown model without dims", OpenAIConfig{Model: "bge-m3"}, false},
		{"unknown model with dims", OpenAIConfig{Model: "bge-m3", Dims: 1024}, true},
		{"negative dims", OpenAIConfig{Dims: -1}, false},
		{"bad base url", OpenAIConfig{BaseURL: "api.openai.com"}, false},
		{"negative batch", OpenAIConfig{MaxBatch: -1}, false},
		{"bad http", OpenAIConfig{HTTP: HTTPConfig{Timeout: -1}}, false},
	})
}

func TestOpenAIErrors(t *testing.T) {
	build := func(base string) (Embedder, error) {
		return NewOpenAI(OpenAIConfig{APIKey: testKey, BaseURL: base, HTTP: fastHTTP()})
	}
	tests := []struct {
		name      string
		status    int
		body      string
		calls     int
		permanent bool
		want      error
		code      string
	}{
		{"quota exhausted", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, 1, true, ErrPermanent, "insufficient_quota"},
		{"model not found", 404, `{"error":{"message":"The model 'text-embedding-4' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, 1, true, ErrPermanent, "model_not_found"},
		{"invalid request", 400, `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error","param":null,"code":null}}`, 1, true, ErrPermanent, "invalid_request_error"},
		{"too long input", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9000 tokens.","type":"invalid_request_error","param":null,"code":null}}`, 2, true, ErrBatchTooLarge, "invalid_request_error"},
		{"server error", 500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, 6, false, nil, "server_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := errorCase(t, build, tt.status, tt.body)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("Embed()=%v, want a *ProviderError", err)
			}
			if pe.Status != tt.status || pe.Code != tt.code || pe.Permanent != tt.permanent {
				t.Fatalf("Embed()=%+v, want status %d code %q permanent %v", pe, tt.status, tt.code, tt.permanent)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Embed()=%v, want %v", err, tt.want)
			}
			if calls != tt.calls {
				t.Fatalf("server got %d requests, want %d", calls, tt.calls)
			}
		})
	}
}
