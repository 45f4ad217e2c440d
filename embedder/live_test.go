package embedder

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestLiveProviders embeds two texts with each real provider whose key is
// set. It runs only with MEMINDEX_LIVE_PROVIDERS=1, and costs a few tokens.
func TestLiveProviders(t *testing.T) {
	if os.Getenv("MEMINDEX_LIVE_PROVIDERS") != "1" {
		t.Skip("set MEMINDEX_LIVE_PROVIDERS=1 and a provider's key to run")
	}
	tests := []struct {
		name, env string
		build     func(key string) (Embedder, error)
	}{
		{"openai", "OPENAI_API_KEY", func(k string) (Embedder, error) { return NewOpenAI(OpenAIConfig{APIKey: k}) }},
		{"mistral", "MISTRAL_API_KEY", func(k string) (Embedder, error) { return NewMistral(MistralConfig{APIKey: k}) }},
		{"voyage", "VOYAGE_API_KEY", func(k string) (Embedder, error) { return NewVoyage(VoyageConfig{APIKey: k}) }},
		{"gemini", "GEMINI_API_KEY", func(k string) (Embedder, error) { return NewGemini(GeminiConfig{APIKey: k}) }},
		{"ollama", "OLLAMA_HOST", func(h string) (Embedder, error) { return NewOllama(OllamaConfig{Host: h}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := os.Getenv(tt.env)
			if key == "" {
				t.Skipf("%s is not set", tt.env)
			}
			e, err := tt.build(key)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, kind := range []Kind{KindDocument, KindQuery} {
				vecs, err := e.Embed(ctx, Request{Texts: []string{"the cat sat on the mat", "Berlin is the capital of Germany"}, Kind: kind})
				if err != nil {
					t.Fatalf("Embed(%s): %v", kind, err)
				}
				if err := CheckVectors(vecs, 2, e.Info().Dims); err != nil {
					t.Fatalf("Embed(%s): %v", kind, err)
				}
			}
		})
	}
}
