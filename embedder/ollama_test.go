package embedder

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

var ollamaAPI = api{
	name:    "ollama",
	keyless: true,
	build: func(base, _ string, maxBatch int, hc HTTPConfig) (Embedder, error) {
		return NewOllama(OllamaConfig{Host: base, Model: "test-embed", Dims: testDims, MaxBatch: maxBatch, HTTP: hc})
	},
	texts: func(t testing.TB, r *http.Request, body []byte) []string {
		checkPost(t, r, "/api/embed")
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("Authorization=%q, want none", got)
		}
		m := decodeBody(t, body)
		if m["model"] != "test-embed" || m["truncate"] != true || m["dimensions"] != float64(testDims) {
			t.Errorf("request body %v, want model test-embed, truncate and dimensions %d", m, testDims)
		}
		return stringList(m["input"])
	},
	answer: func(w http.ResponseWriter, vecs []string, _ []int) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":"test-embed","embeddings":[%s],"total_duration":1,"load_duration":1,"prompt_eval_count":4}`, strings.Join(vecs, ","))
	},
	fail: func(w http.ResponseWriter, status int, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":%q}`, message)
	},
	tooLarge: func(w http.ResponseWriter) { // a proxy in front of Ollama
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, "<html><body>413 Request Entity Too Large</body></html>")
	},
}

func TestOllamaRequest(t *testing.T) {
	texts := []any{"hello", "world"}
	runRequestCases(t, ollamaAPI, []requestCase{
		{
			name: "defaults",
			build: func(base string) (Embedder, error) {
				return NewOllama(OllamaConfig{Host: base + "/"})
			},
			kind:     KindQuery,
			path:     "/api/embed",
			header:   map[string]string{"Authorization": ""},
			wantBody: map[string]any{"model": "nomic-embed-text", "input": texts, "truncate": true},
			wantInfo: Info{Provider: "ollama", Model: "nomic-embed-text", Dims: 768},
			dims:     768,
		},
		{
			name: "tagged model, shortened",
			build: func(base string) (Embedder, error) {
				return NewOllama(OllamaConfig{Host: base, Model: "mxbai-embed-large:latest", Dims: 512})
			},
			path:     "/api/embed",
			wantBody: map[string]any{"model": "mxbai-embed-large:latest", "input": texts, "truncate": true, "dimensions": float64(512)},
			wantInfo: Info{Provider: "ollama", Model: "mxbai-embed-large:latest", Dims: 512},
			dims:     512,
		},
	})
}

func TestOllamaValidate(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"zero takes defaults", OllamaConfig{}, true},
		{"unknown model without dims", OllamaConfig{Model: "my-embed"}, false},
		{"unknown model with dims", OllamaConfig{Model: "my-embed", Dims: 100}, true},
		{"longer than native", OllamaConfig{Dims: 1024}, false},
		{"bad host", OllamaConfig{Host: "ftp://x"}, false},
	})
}

func TestOllamaModelNotFound(t *testing.T) {
	build := func(base string) (Embedder, error) {
		return NewOllama(OllamaConfig{Host: base, HTTP: fastHTTP()})
	}
	calls, err := errorCase(t, build, 404, `{"error":"model \"nomic-embed-text\" not found, try pulling it first"}`)
	if !errors.Is(err, ErrPermanent) || calls != 1 || !strings.Contains(err.Error(), "try pulling it first") {
		t.Fatalf("Embed()=%v after %d requests, want a permanent error with the message after 1", err, calls)
	}
}
