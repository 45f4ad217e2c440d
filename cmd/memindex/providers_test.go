package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memindex/embedder"
)

func TestNewEmbedderConfiguration(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VOYAGE_API_KEY", "MISTRAL_API_KEY", "OLLAMA_HOST"} {
		t.Setenv(v, "")
	}
	tests := []struct {
		name    string
		p       providerFlags
		wantErr string
		unsafe  bool
	}{
		{name: "builtin default dims", p: providerFlags{embedder.ProviderConfig{Name: "builtin"}}},
		{name: "unknown provider", p: providerFlags{embedder.ProviderConfig{Name: "word2vec"}}, wantErr: "unknown provider"},
		{name: "openai needs a key", p: providerFlags{embedder.ProviderConfig{Name: "openai"}}, wantErr: "OPENAI_API_KEY"},
		{name: "gemini needs a key", p: providerFlags{embedder.ProviderConfig{Name: "gemini"}}, wantErr: "GEMINI_API_KEY or GOOGLE_API_KEY"},
		{name: "metadata address refused", p: providerFlags{embedder.ProviderConfig{Name: "openai", BaseURL: "http://169.254.169.254/v1", Model: "m", Dims: 8}}, unsafe: true},
		{name: "local OpenAI-compatible server needs no key", p: providerFlags{embedder.ProviderConfig{Name: "openai", BaseURL: "http://127.0.0.1:8080", Model: "local", Dims: 64}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := embedder.NewProvider(tt.p.config())
			var info embedder.Info
			if e != nil {
				info = e.Info()
			}
			switch {
			case tt.unsafe:
				if !errors.Is(err, embedder.ErrUnsafeURL) {
					t.Fatalf("NewProvider()=%v, want ErrUnsafeURL", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewProvider()=%v, want an error mentioning %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("NewProvider()=%v, want nil", err)
			case e == nil || info.Dims == 0:
				t.Fatalf("NewProvider() info=%+v, want an embedder with dims", info)
			}
		})
	}
}

// TestOllamaFromEnvironment: OLLAMA_HOST as ollama sets it (host:port) and a
// key read from a *_FILE reach a server speaking Ollama's /api/embed.
func TestOllamaFromEnvironment(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/api/embed" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		out := struct {
			Model      string      `json:"model"`
			Embeddings [][]float32 `json:"embeddings"`
		}{Model: req.Model}
		for range req.Input {
			out.Embeddings = append(out.Embeddings, []float32{0.6, 0.8, 0})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	t.Setenv("OLLAMA_HOST", strings.TrimPrefix(srv.URL, "http://"))
	e, err := embedder.NewProvider(providerFlags{embedder.ProviderConfig{Name: "ollama", Model: "tiny", Dims: 3}}.config())
	if err != nil {
		t.Fatalf("NewProvider(ollama)=%v", err)
	}
	info := e.Info()
	vecs, err := e.Embed(context.Background(), embedder.Request{Texts: []string{"a", "b"}})
	if err != nil || len(vecs) != 2 || info.Provider != "ollama" {
		t.Fatalf("Embed()=%v, %v (info %+v); want 2 vectors from ollama", vecs, err, info)
	}

	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VOYAGE_API_KEY", "")
	t.Setenv("VOYAGE_API_KEY_FILE", keyFile)
	if got, err := envKeys("voyage"); err != nil || got != "sk-from-file" {
		t.Fatalf("envKeys(voyage)=%q, %v; want the file's key", got, err)
	}
}
