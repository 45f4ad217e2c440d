package embedder

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

var voyageAPI = api{
	name:    "voyage",
	indexed: true,
	build: func(base, key string, maxBatch int, hc HTTPConfig) (Embedder, error) {
		return NewVoyage(VoyageConfig{APIKey: key, BaseURL: base, Model: "test-embed", Dims: testDims, MaxBatch: maxBatch, HTTP: hc})
	},
	texts: func(t testing.TB, r *http.Request, body []byte) []string {
		checkPost(t, r, "/v1/embeddings")
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization=%q, want the bearer key", got)
		}
		m := decodeBody(t, body)
		if m["model"] != "test-embed" || m["input_type"] != "document" || m["output_dimension"] != float64(testDims) {
			t.Errorf("request body %v, want model test-embed, input_type document, output_dimension %d", m, testDims)
		}
		return stringList(m["input"])
	},
	answer: func(w http.ResponseWriter, vecs []string, idx []int) {
		items := make([]string, len(vecs))
		for i, v := range vecs {
			items[i] = fmt.Sprintf(`{"object":"embedding","embedding":%s,"index":%d}`, v, idx[i])
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[%s],"model":"test-embed","usage":{"total_tokens":8}}`, strings.Join(items, ","))
	},
	fail: func(w http.ResponseWriter, status int, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"detail":%q}`, message)
	},
	tooLarge: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"detail":"The batch size limit is 2. Your batch size is 3."}`)
	},
}

func TestVoyageRequest(t *testing.T) {
	texts := []any{"hello", "world"}
	runRequestCases(t, voyageAPI, []requestCase{
		{
			name: "defaults, documents",
			build: func(base string) (Embedder, error) {
				return NewVoyage(VoyageConfig{APIKey: testKey, BaseURL: base})
			},
			kind:     KindDocument,
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "voyage-3.5", "input": texts, "input_type": "document"},
			wantInfo: Info{Provider: "voyage", Model: "voyage-3.5", Dims: 1024},
			dims:     1024,
		},
		{
			name: "queries, shortened",
			build: func(base string) (Embedder, error) {
				return NewVoyage(VoyageConfig{APIKey: testKey, BaseURL: base + "/v1", Model: "voyage-3-large", Dims: 512})
			},
			kind:     KindQuery,
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "voyage-3-large", "input": texts, "input_type": "query", "output_dimension": float64(512)},
			wantInfo: Info{Provider: "voyage", Model: "voyage-3-large", Dims: 512},
			dims:     512,
		},
		{
			name: "fixed-size model",
			build: func(base string) (Embedder, error) {
				return NewVoyage(VoyageConfig{APIKey: testKey, BaseURL: base, Model: "voyage-3-lite", Dims: 512})
			},
			path:     "/v1/embeddings",
			header:   map[string]string{"Authorization": "Bearer " + testKey},
			wantBody: map[string]any{"model": "voyage-3-lite", "input": texts, "input_type": "document"},
			wantInfo: Info{Provider: "voyage", Model: "voyage-3-lite", Dims: 512},
			dims:     512,
		},
	})
}

func TestVoyageValidate(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"key and defaults", VoyageConfig{APIKey: "k"}, true},
		{"no key", VoyageConfig{}, false},
		{"offered size", VoyageConfig{APIKey: "k", Dims: 2048}, true},
		{"size not offered", VoyageConfig{APIKey: "k", Dims: 300}, false},
		{"fixed model, other size", VoyageConfig{APIKey: "k", Model: "voyage-3-lite", Dims: 1024}, false},
		{"unknown model without dims", VoyageConfig{APIKey: "k", Model: "voyage-9"}, false},
		{"unknown model with dims", VoyageConfig{APIKey: "k", Model: "voyage-9", Dims: 1024}, true},
	})
}
