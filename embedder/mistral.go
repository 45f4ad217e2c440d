package embedder

import (
	"context"
	"fmt"
)

// Defaults and limits of the Mistral embeddings API.
const (
	mistralProvider     = "mistral"
	mistralBaseURL      = "https://api.mistral.ai"
	mistralDefaultModel = "mistral-embed"
	mistralMaxItems     = 512
	// mistralMaxTokens stays below the API's 16384 tokens per request:
	// Mistral's tokenizer spends more tokens than the len/4 estimate.
	mistralMaxTokens = 12_000
	// mistralFlexible is the model that takes "output_dimension".
	mistralFlexible = "codestral-embed"
)

// mistralModelDims are the (default) sizes of Mistral's embedding models.
var mistralModelDims = map[string]int{
	"mistral-embed":   1024,
	"codestral-embed": 1536,
}

// MistralConfig configures Mistral's embeddings API.
type MistralConfig struct {
	// APIKey is sent as a Bearer token; it is required with the default
	// BaseURL.
	APIKey string
	// BaseURL is the server, with or without "/v1"; empty means
	// "https://api.mistral.ai".
	BaseURL string
	// Model is the model name; empty means "mistral-embed" (1024 dims).
	Model string
	// Dims is the vector length; 0 means the model's. Only codestral-embed
	// can change it (sent as "output_dimension", up to 3072); it is
	// required for models not listed.
	Dims int
	// MaxBatch is the most texts per request; 0 means 512.
	MaxBatch int
	// MaxTokens is the most estimated tokens per request; 0 means 12000,
	// leaving room under the API's 16384 for the estimate's error.
	MaxTokens int
	// HTTP sets timeouts and retries.
	HTTP HTTPConfig
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c MistralConfig) Validate() error {
	_, err := c.resolve()
	return err
}

func (c MistralConfig) resolve() (MistralConfig, error) {
	if c.APIKey == "" && (c.BaseURL == "" || c.BaseURL == mistralBaseURL) {
		return c, fmt.Errorf("mistral: no api key: %w", ErrInvalidConfig)
	}
	base, err := baseURL(c.BaseURL, mistralBaseURL, true)
	if err != nil {
		return c, fmt.Errorf("mistral: %w", err)
	}
	c.BaseURL = base
	if c.Model == "" {
		c.Model = mistralDefaultModel
	}
	native := mistralModelDims
	if c.Model == mistralFlexible {
		native = map[string]int{mistralFlexible: 3072}
	}
	if err := checkDims(mistralProvider, c.Model, c.Dims, native, c.Model == mistralFlexible); err != nil {
		return c, err
	}
	if c.Dims == 0 {
		c.Dims = mistralModelDims[c.Model]
	}
	if err := checkLimits(mistralProvider, c.MaxBatch, c.MaxTokens); err != nil {
		return c, err
	}
	return c, c.HTTP.Validate()
}

// Mistral embeds texts with Mistral's embeddings API. It is safe for
// concurrent use; its requests share one rate-limit cool-down.
type Mistral struct {
	cfg    MistralConfig
	limits limits
	url    string
	http   *httpClient
}

var _ Embedder = (*Mistral)(nil)

// NewMistral returns a Mistral embedder for cfg, or an error wrapping
// ErrInvalidConfig.
func NewMistral(cfg MistralConfig) (*Mistral, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("new mistral embedder: %w", err)
	}
	return &Mistral{
		cfg:    cfg,
		limits: limits{items: orDefault(cfg.MaxBatch, mistralMaxItems), tokens: orDefault(cfg.MaxTokens, mistralMaxTokens)},
		url:    cfg.BaseURL + "/v1/embeddings",
		http:   newHTTPClient(mistralProvider, cfg.HTTP, cfg.APIKey, bearer(cfg.APIKey), parseOpenAIError),
	}, nil
}

// Info returns the provider "mistral", the model, its Dims and the base URL
// without "/v1".
func (m *Mistral) Info() Info {
	return Info{Provider: mistralProvider, Model: m.cfg.Model, Dims: m.cfg.Dims, BaseURL: m.cfg.BaseURL}
}

// Embed returns one unit vector per text, in order. The Kind is ignored.
// Errors wrap ErrBadVector, or are a *ProviderError, or wrap the context's
// error.
func (m *Mistral) Embed(ctx context.Context, req Request) ([][]float32, error) {
	return embedBatches(ctx, req.Texts, m.limits, m.send)
}

// mistralRequest is the body of POST /v1/embeddings.
type mistralRequest struct {
	Model           string   `json:"model"`
	Input           []string `json:"input"`
	OutputDimension int      `json:"output_dimension,omitempty"`
}

func (m *Mistral) send(ctx context.Context, texts []string) ([][]float32, error) {
	body := mistralRequest{Model: m.cfg.Model, Input: texts}
	if m.cfg.Model == mistralFlexible {
		body.OutputDimension = m.cfg.Dims
	}
	return postIndexed(ctx, m.http, m.url, body, len(texts), m.cfg.Dims)
}
