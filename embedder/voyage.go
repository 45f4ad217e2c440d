package embedder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// Defaults and limits of the Voyage AI embeddings API.
const (
	voyageProvider     = "voyage"
	voyageBaseURL      = "https://api.voyageai.com"
	voyageDefaultModel = "voyage-3.5"
	voyageMaxItems     = 1000
	voyageMaxTokens    = 120_000
)

// voyageModelDims are the default sizes of Voyage's text embedding models.
var voyageModelDims = map[string]int{
	"voyage-3.5":       1024,
	"voyage-3.5-lite":  1024,
	"voyage-3-large":   1024,
	"voyage-code-3":    1024,
	"voyage-3":         1024,
	"voyage-3-lite":    512,
	"voyage-finance-2": 1024,
	"voyage-law-2":     1024,
	"voyage-code-2":    1536,
}

// voyageFlexible are the models that take "output_dimension", and the
// sizes they offer.
var (
	voyageFlexible = []string{"voyage-3.5", "voyage-3.5-lite", "voyage-3-large", "voyage-code-3"}
	voyageSizes    = []int{256, 512, 1024, 2048}
)

// VoyageConfig configures Voyage AI's embeddings API.
type VoyageConfig struct {
	// APIKey is sent as a Bearer token; it is required with the default
	// BaseURL.
	APIKey string
	// BaseURL is the server, with or without "/v1"; empty means
	// "https://api.voyageai.com".
	BaseURL string
	// Model is the model name; empty means "voyage-3.5" (1024 dims).
	Model string
	// Dims is the vector length, sent as "output_dimension"; 0 means the
	// model's default. voyage-3.5, -3.5-lite, -3-large and -code-3 offer
	// 256, 512, 1024 and 2048; other listed models only their own size;
	// models not listed need it, and get it sent.
	Dims int
	// MaxBatch is the most texts per request; 0 means 1000.
	MaxBatch int
	// MaxTokens is the most estimated tokens per request; 0 means 120000
	// (the limit of voyage-3-large and -code-3; others allow more).
	MaxTokens int
	// HTTP sets timeouts and retries.
	HTTP HTTPConfig
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c VoyageConfig) Validate() error {
	_, _, err := c.resolve()
	return err
}

// resolve validates c, fills in its defaults and says whether Dims is sent.
func (c VoyageConfig) resolve() (VoyageConfig, bool, error) {
	if c.APIKey == "" && (c.BaseURL == "" || c.BaseURL == voyageBaseURL) {
		return c, false, fmt.Errorf("voyage: no api key: %w", ErrInvalidConfig)
	}
	base, err := baseURL(c.BaseURL, voyageBaseURL, true)
	if err != nil {
		return c, false, fmt.Errorf("voyage: %w", err)
	}
	c.BaseURL = base
	if c.Model == "" {
		c.Model = voyageDefaultModel
	}
	n, known := voyageModelDims[c.Model]
	flexible := slices.Contains(voyageFlexible, c.Model)
	switch {
	case c.Dims < 0:
		return c, false, fmt.Errorf("voyage: dims %d is negative: %w", c.Dims, ErrInvalidConfig)
	case !known && c.Dims == 0:
		return c, false, fmt.Errorf("voyage: model %q needs Dims set: %w", c.Model, ErrInvalidConfig)
	case flexible && c.Dims != 0 && !slices.Contains(voyageSizes, c.Dims):
		return c, false, fmt.Errorf("voyage: model %q offers dims %v, not %d: %w", c.Model, voyageSizes, c.Dims, ErrInvalidConfig)
	case known && !flexible && c.Dims != 0 && c.Dims != n:
		return c, false, fmt.Errorf("voyage: model %q has %d dims, not %d: %w", c.Model, n, c.Dims, ErrInvalidConfig)
	}
	send := c.Dims != 0 && (flexible || !known)
	if c.Dims == 0 {
		c.Dims = n
	}
	if err := checkLimits(voyageProvider, c.MaxBatch, c.MaxTokens); err != nil {
		return c, false, err
	}
	return c, send, c.HTTP.Validate()
}

// Voyage embeds texts with Voyage AI's embeddings API. It is safe for
// concurrent use; its requests share one rate-limit cool-down.
type Voyage struct {
	cfg      VoyageConfig
	sendDims bool
	limits   limits
	url      string
	http     *httpClient
}

var _ Embedder = (*Voyage)(nil)

// NewVoyage returns a Voyage embedder for cfg, or an error wrapping
// ErrInvalidConfig.
func NewVoyage(cfg VoyageConfig) (*Voyage, error) {
	cfg, sendDims, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("new voyage embedder: %w", err)
	}
	return &Voyage{
		cfg:      cfg,
		sendDims: sendDims,
		limits:   limits{items: orDefault(cfg.MaxBatch, voyageMaxItems), tokens: orDefault(cfg.MaxTokens, voyageMaxTokens)},
		url:      cfg.BaseURL + "/v1/embeddings",
		http:     newHTTPClient(voyageProvider, cfg.HTTP, cfg.APIKey, bearer(cfg.APIKey), parseVoyageError),
	}, nil
}

// Info returns the provider "voyage", the model, its Dims and the base URL
// without "/v1".
func (v *Voyage) Info() Info {
	return Info{Provider: voyageProvider, Model: v.cfg.Model, Dims: v.cfg.Dims, BaseURL: v.cfg.BaseURL}
}

// Embed returns one unit vector per text, in order. KindQuery is sent as
// input_type "query", anything else as "document". Errors wrap
// ErrBadVector, or are a *ProviderError, or wrap the context's error.
func (v *Voyage) Embed(ctx context.Context, req Request) ([][]float32, error) {
	inputType := "document"
	if req.Kind == KindQuery {
		inputType = "query"
	}
	return embedBatches(ctx, req.Texts, v.limits, func(ctx context.Context, texts []string) ([][]float32, error) {
		body := voyageRequest{Model: v.cfg.Model, Input: texts, InputType: inputType}
		if v.sendDims {
			body.OutputDimension = v.cfg.Dims
		}
		return postIndexed(ctx, v.http, v.url, body, len(texts), v.cfg.Dims)
	})
}

// voyageRequest is the body of POST /v1/embeddings.
type voyageRequest struct {
	Model           string   `json:"model"`
	Input           []string `json:"input"`
	InputType       string   `json:"input_type"`
	OutputDimension int      `json:"output_dimension,omitempty"`
}

// parseVoyageError reads Voyage's {"detail": "..."}.
func parseVoyageError(status int, body []byte) vendorError {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil {
		return vendorError{}
	}
	v := vendorError{Message: jsonText(e.Detail)}
	v.TooLarge = status >= 400 && status < 500 && status != http.StatusTooManyRequests && tooLargeMessage(v.Message)
	return v
}
