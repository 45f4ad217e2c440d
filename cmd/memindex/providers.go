package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"memindex/embedder"
)

// providerFlags select and configure the embedding provider. Keys come only
// from the environment (the vendors' own variable names, or NAME_FILE
// holding the key), never from flags, so they stay out of process lists.
type providerFlags struct {
	name    string
	model   string
	baseURL string
	dims    int
	timeout time.Duration // per request; 0: 30s
	retries int           // retries of one request; 0: 5, negative: none
	// observe is told about each HTTP request (metrics); nil: none.
	observe embedder.RequestObserver
}

func (p *providerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.name, "embedder", env("MEMINDEX_EMBEDDER", "builtin"), "embedding provider: builtin, openai (and OpenAI-compatible servers with --base-url), ollama, gemini, voyage, mistral (MEMINDEX_EMBEDDER)")
	fs.StringVar(&p.model, "model", env("MEMINDEX_MODEL", ""), "provider model; empty: the provider's default (MEMINDEX_MODEL)")
	fs.StringVar(&p.baseURL, "base-url", env("MEMINDEX_BASE_URL", ""), "provider URL, e.g. a local OpenAI-compatible server; ollama defaults to OLLAMA_HOST (MEMINDEX_BASE_URL)")
	fs.IntVar(&p.dims, "dims", envInt("MEMINDEX_DIMS", 0), "vector dimension; 0: 384 for builtin, the model's own otherwise (MEMINDEX_DIMS)")
	fs.DurationVar(&p.timeout, "embed-timeout", 30*time.Second, "timeout of one provider request")
	fs.IntVar(&p.retries, "embed-retries", envInt("MEMINDEX_EMBED_RETRIES", 5), "retries of one provider request on 429, 5xx and timeouts; -1: none (MEMINDEX_EMBED_RETRIES)")
}

// secret reads a key from the environment variable name, or from the file
// named by name_FILE.
func secret(names ...string) (string, error) {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v, nil
		}
		if f := os.Getenv(n + "_FILE"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("%s_FILE: %w", n, err)
			}
			return strings.TrimSpace(string(b)), nil
		}
	}
	return "", nil
}

// newEmbedder builds the configured provider. A remote provider gets an HTTP
// client that refuses metadata and link-local addresses (and loopback the
// URL does not name), on every redirect too.
func newEmbedder(p providerFlags) (embedder.Embedder, embedder.Info, error) {
	var e embedder.Embedder
	var err error
	httpCfg := func(base, def string) (embedder.HTTPConfig, error) {
		if base == "" {
			base = def
		}
		c, err := embedder.NewSafeHTTPClient(base, 0)
		return embedder.HTTPConfig{Client: c, Timeout: p.timeout, MaxRetries: p.retries, Observe: p.observe}, err
	}
	need := func(key, names string) error {
		if key == "" {
			return fmt.Errorf("--embedder %s needs an API key in %s (or %s_FILE)", p.name, names, strings.Split(names, " ")[0])
		}
		return nil
	}
	switch p.name {
	case "builtin", "":
		e, err = embedder.NewBuiltin(embedder.BuiltinConfig{Dims: p.dims})
	case "openai":
		key, kerr := secret("OPENAI_API_KEY")
		if kerr != nil {
			return nil, embedder.Info{}, kerr
		}
		if p.baseURL == "" {
			if err := need(key, "OPENAI_API_KEY"); err != nil {
				return nil, embedder.Info{}, err
			}
		}
		hc, herr := httpCfg(p.baseURL, "https://api.openai.com")
		if herr != nil {
			return nil, embedder.Info{}, fmt.Errorf("--base-url: %w", herr)
		}
		e, err = embedder.NewOpenAI(embedder.OpenAIConfig{APIKey: key, BaseURL: p.baseURL, Model: p.model, Dims: p.dims, HTTP: hc})
	case "mistral":
		key, kerr := secret("MISTRAL_API_KEY")
		if kerr == nil && p.baseURL == "" {
			kerr = need(key, "MISTRAL_API_KEY")
		}
		if kerr != nil {
			return nil, embedder.Info{}, kerr
		}
		hc, herr := httpCfg(p.baseURL, "https://api.mistral.ai")
		if herr != nil {
			return nil, embedder.Info{}, fmt.Errorf("--base-url: %w", herr)
		}
		e, err = embedder.NewMistral(embedder.MistralConfig{APIKey: key, BaseURL: p.baseURL, Model: p.model, Dims: p.dims, HTTP: hc})
	case "voyage":
		key, kerr := secret("VOYAGE_API_KEY")
		if kerr == nil && p.baseURL == "" {
			kerr = need(key, "VOYAGE_API_KEY")
		}
		if kerr != nil {
			return nil, embedder.Info{}, kerr
		}
		hc, herr := httpCfg(p.baseURL, "https://api.voyageai.com")
		if herr != nil {
			return nil, embedder.Info{}, fmt.Errorf("--base-url: %w", herr)
		}
		e, err = embedder.NewVoyage(embedder.VoyageConfig{APIKey: key, BaseURL: p.baseURL, Model: p.model, Dims: p.dims, HTTP: hc})
	case "gemini":
		key, kerr := secret("GEMINI_API_KEY", "GOOGLE_API_KEY")
		if kerr == nil && p.baseURL == "" {
			kerr = need(key, "GEMINI_API_KEY or GOOGLE_API_KEY")
		}
		if kerr != nil {
			return nil, embedder.Info{}, kerr
		}
		hc, herr := httpCfg(p.baseURL, "https://generativelanguage.googleapis.com")
		if herr != nil {
			return nil, embedder.Info{}, fmt.Errorf("--base-url: %w", herr)
		}
		e, err = embedder.NewGemini(embedder.GeminiConfig{APIKey: key, BaseURL: p.baseURL, Model: p.model, Dims: p.dims, HTTP: hc})
	case "ollama":
		host := p.baseURL
		if host == "" {
			host = env("OLLAMA_HOST", "http://127.0.0.1:11434")
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host // OLLAMA_HOST is often host:port
		}
		hc, herr := httpCfg(host, "")
		if herr != nil {
			return nil, embedder.Info{}, fmt.Errorf("ollama host: %w", herr)
		}
		e, err = embedder.NewOllama(embedder.OllamaConfig{Host: host, Model: p.model, Dims: p.dims, HTTP: hc})
	default:
		return nil, embedder.Info{}, fmt.Errorf("--embedder %q: unknown provider (available: builtin, openai, ollama, gemini, voyage, mistral)", p.name)
	}
	if err != nil {
		return nil, embedder.Info{}, fmt.Errorf("--embedder %s: %w", p.name, err)
	}
	return e, e.Info(), nil
}
