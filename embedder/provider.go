package embedder

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Providers is every provider name NewProvider accepts.
const Providers = "builtin, openai, ollama, gemini, voyage, mistral"

// KeyEnv names the environment variables that hold each remote provider's
// API key (the vendors' own names); a NAME_FILE variable may name a file
// holding it instead. The embedder package never reads them: the caller's
// ProviderConfig.Keys does.
var KeyEnv = map[string][]string{
	"openai":  {"OPENAI_API_KEY"},
	"mistral": {"MISTRAL_API_KEY"},
	"voyage":  {"VOYAGE_API_KEY"},
	"gemini":  {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
}

// DefaultOllamaHost is the Ollama server a ProviderConfig without BaseURL
// names.
const DefaultOllamaHost = "http://127.0.0.1:11434"

// KeySource returns the API key of a remote provider ("" when none is set).
type KeySource func(provider string) (string, error)

// ProviderConfig selects and configures an embedding provider. The zero
// value is the built-in embedder at its default dimension.
type ProviderConfig struct {
	// Name is one of Providers; "" is builtin.
	Name string
	// Model is the provider's model; "" its default.
	Model string
	// BaseURL is the provider's URL, e.g. a local OpenAI-compatible server;
	// "" its public endpoint (DefaultOllamaHost for ollama).
	BaseURL string
	// Dims is the vector dimension; 0: 384 for builtin, the model's own
	// otherwise.
	Dims int
	// Timeout bounds one request; 0: 30s.
	Timeout time.Duration
	// Retries of one request on 429, 5xx and timeouts; 0: 5, negative: none.
	Retries int
	// Keys returns the API key of a provider; nil: no key (a local server).
	Keys KeySource
	// Observe is told about each HTTP request (metrics); nil: none.
	Observe RequestObserver
}

// NewProvider builds the provider c names. A remote provider gets an HTTP
// client that refuses metadata and link-local addresses (and loopback the
// URL does not name), on every redirect too. Errors name the --embedder
// flag, the setting users know.
func NewProvider(c ProviderConfig) (Embedder, error) {
	key := func() (string, error) {
		if c.Keys == nil {
			return "", nil
		}
		return c.Keys(c.Name)
	}
	httpCfg := func(def string) (HTTPConfig, error) {
		base := c.BaseURL
		if base == "" {
			base = def
		}
		hc, err := NewSafeHTTPClient(base, 0)
		if err != nil {
			return HTTPConfig{}, fmt.Errorf("--base-url: %w", err)
		}
		return HTTPConfig{Client: hc, Timeout: c.Timeout, MaxRetries: c.Retries, Observe: c.Observe}, nil
	}
	// remote resolves a hosted provider's key (required unless BaseURL names
	// a compatible server) and HTTP settings.
	remote := func(def string) (string, HTTPConfig, error) {
		k, err := key()
		if err != nil {
			return "", HTTPConfig{}, err
		}
		if k == "" && c.BaseURL == "" {
			names := KeyEnv[c.Name]
			return "", HTTPConfig{}, fmt.Errorf("--embedder %s needs an API key in %s (or %s_FILE)", c.Name, strings.Join(names, " or "), names[0])
		}
		hc, err := httpCfg(def)
		return k, hc, err
	}
	var e Embedder
	var err error
	switch c.Name {
	case "builtin", "":
		e, err = NewBuiltin(BuiltinConfig{Dims: c.Dims})
	case "openai":
		k, hc, rerr := remote("https://api.openai.com")
		if rerr != nil {
			return nil, rerr
		}
		e, err = NewOpenAI(OpenAIConfig{APIKey: k, BaseURL: c.BaseURL, Model: c.Model, Dims: c.Dims, HTTP: hc})
	case "mistral":
		k, hc, rerr := remote("https://api.mistral.ai")
		if rerr != nil {
			return nil, rerr
		}
		e, err = NewMistral(MistralConfig{APIKey: k, BaseURL: c.BaseURL, Model: c.Model, Dims: c.Dims, HTTP: hc})
	case "voyage":
		k, hc, rerr := remote("https://api.voyageai.com")
		if rerr != nil {
			return nil, rerr
		}
		e, err = NewVoyage(VoyageConfig{APIKey: k, BaseURL: c.BaseURL, Model: c.Model, Dims: c.Dims, HTTP: hc})
	case "gemini":
		k, hc, rerr := remote("https://generativelanguage.googleapis.com")
		if rerr != nil {
			return nil, rerr
		}
		e, err = NewGemini(GeminiConfig{APIKey: k, BaseURL: c.BaseURL, Model: c.Model, Dims: c.Dims, HTTP: hc})
	case "ollama":
		host := c.BaseURL
		if host == "" {
			host = DefaultOllamaHost
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host // OLLAMA_HOST is often host:port
		}
		c.BaseURL = host
		hc, herr := httpCfg("")
		if herr != nil {
			return nil, fmt.Errorf("ollama host: %w", herr)
		}
		e, err = NewOllama(OllamaConfig{Host: host, Model: c.Model, Dims: c.Dims, HTTP: hc})
	default:
		return nil, fmt.Errorf("--embedder %q: unknown provider (available: %s)", c.Name, Providers)
	}
	if err != nil {
		return nil, fmt.Errorf("--embedder %s: %w", c.Name, err)
	}
	return e, nil
}

// Space names the vector space of info's vectors, as shards record it:
// provider/model/dims, with @BaseURL for a remote provider at a given URL.
func Space(info Info) string {
	s := info.Provider + "/" + info.Model + "/" + strconv.Itoa(info.Dims)
	if info.BaseURL != "" && info.Provider != "builtin" {
		s += "@" + info.BaseURL
	}
	return s
}

// ParseSpace turns a recorded vector space back into provider settings (no
// timeout, retries, keys or observer: the caller adds its own).
func ParseSpace(space string) (ProviderConfig, error) {
	base := ""
	if i := strings.Index(space, "@"); i >= 0 {
		space, base = space[:i], space[i+1:]
	}
	parts := strings.Split(space, "/")
	if len(parts) < 3 {
		return ProviderConfig{}, fmt.Errorf("vector space %q is not provider/model/dims", space)
	}
	dims, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil {
		return ProviderConfig{}, fmt.Errorf("vector space %q: %w", space, err)
	}
	return ProviderConfig{Name: parts[0], Model: strings.Join(parts[1:len(parts)-1], "/"), BaseURL: base, Dims: dims}, nil
}
