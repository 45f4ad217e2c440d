package embedder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Defaults and limits of the OpenAI embeddings API.
const (
	openAIProvider      = "openai"
	openAIBaseURL       = "https://api.openai.com"
	openAIDefaultModel  = "text-embedding-3-small"
	openAIMaxItems      = 2048
	openAIMaxTokens     = 300_000
	openAIQuotaExceeded = "insufficient_quota"
)

// openAIModelDims are the native sizes of OpenAI's embedding models.
var openAIModelDims = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

// OpenAIConfig configures OpenAI, or any server speaking its embeddings API
// (llama.cpp, vLLM, LM Studio, TEI, LiteLLM).
type OpenAIConfig struct {
	// APIKey is sent as a Bearer token; empty sends no Authorization
	// header, for local servers.
	APIKey string
	// BaseURL is the server, with or without a trailing "/v1"; empty means
	// "https://api.openai.com".
	BaseURL string
	// Model is the model name; empty means "text-embedding-3-small".
	Model string
	// Dims is the vector length; 0 means the model's. When set for
	// text-embedding-3-* it is sent as "dimensions", at most the native
	// size. It is required for models OpenAI does not list (local ones).
	Dims int
	// MaxBatch is the most texts per request; 0 means 2048.
	MaxBatch int
	// MaxTokens is the most estimated tokens per request; 0 means 300000.
	MaxTokens int
	// HTTP sets timeouts and retries.
	HTTP HTTPConfig
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c OpenAIConfig) Validate() error {
	_, err := c.resolve()
	return err
}

// resolve validates c and fills in its defaults.
func (c OpenAIConfig) resolve() (OpenAIConfig, error) {
	base, err := baseURL(c.BaseURL, openAIBaseURL, true)
	if err != nil {
		return c, fmt.Errorf("openai: %w", err)
	}
	c.BaseURL = base
	if c.Model == "" {
		c.Model = openAIDefaultModel
	}
	if err := checkDims(openAIProvider, c.Model, c.Dims, openAIModelDims, strings.HasPrefix(c.Model, "text-embedding-3-")); err != nil {
		return c, err
	}
	if c.Dims == 0 {
		c.Dims = openAIModelDims[c.Model]
	}
	if err := checkLimits(openAIProvider, c.MaxBatch, c.MaxTokens); err != nil {
		return c, err
	}
	return c, c.HTTP.Validate()
}

// OpenAI embeds texts with the OpenAI embeddings API. It is safe for
// concurrent use; its requests share one rate-limit cool-down.
type OpenAI struct {
	cfg      OpenAIConfig
	sendDims bool // "dimensions" goes in the body
	limits   limits
	url      string
	http     *httpClient
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI embedder for cfg, or an error wrapping
// ErrInvalidConfig.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	sendDims := cfg.Dims != 0
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("new openai embedder: %w", err)
	}
	key := cfg.APIKey
	return &OpenAI{
		cfg:      cfg,
		sendDims: sendDims && strings.HasPrefix(cfg.Model, "text-embedding-3-"),
		limits:   limits{items: orDefault(cfg.MaxBatch, openAIMaxItems), tokens: orDefault(cfg.MaxTokens, openAIMaxTokens)},
		url:      cfg.BaseURL + "/v1/embeddings",
		http:     newHTTPClient(openAIProvider, cfg.HTTP, key, bearer(key), parseOpenAIError),
	}, nil
}

// Info returns the provider "openai", the model, its Dims and the base URL
// without "/v1".
func (o *OpenAI) Info() Info {
	return Info{Provider: openAIProvider, Model: o.cfg.Model, Dims: o.cfg.Dims, BaseURL: o.cfg.BaseURL}
}

// Embed returns one unit vector per text, in order. The Kind is ignored:
// OpenAI embeds queries and documents alike. Errors wrap ErrBadVector, or
// are a *ProviderError, or wrap the context's error.
func (o *OpenAI) Embed(ctx context.Context, req Request) ([][]float32, error) {
	return embedBatches(ctx, req.Texts, o.limits, o.send)
}

// openAIRequest is the body of POST /v1/embeddings.
type openAIRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// openAIResponse is the answer of OpenAI and Mistral.
type openAIResponse struct {
	Data []indexed `json:"data"`
}

func (o *OpenAI) send(ctx context.Context, texts []string) ([][]float32, error) {
	body := openAIRequest{Model: o.cfg.Model, Input: texts, EncodingFormat: "float"}
	if o.sendDims {
		body.Dimensions = o.cfg.Dims
	}
	return postIndexed(ctx, o.http, o.url, body, len(texts), o.cfg.Dims)
}

// postIndexed posts an OpenAI-shaped request and returns the checked,
// normalised vectors of its answer in input order.
func postIndexed(ctx context.Context, c *httpClient, url string, body any, n, dims int) ([][]float32, error) {
	var resp openAIResponse
	if err := c.post(ctx, url, body, &resp); err != nil {
		return nil, err
	}
	vecs, err := byIndex(resp.Data, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.provider, err)
	}
	return finish(c.provider, vecs, n, dims)
}

// parseOpenAIError reads OpenAI's {"error":{"message","type","code"}},
// Mistral's top-level {"message","type","code"} and a FastAPI "detail".
func parseOpenAIError(status int, body []byte) vendorError {
	var e struct {
		Error *struct {
			Message json.RawMessage `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
		Message json.RawMessage `json:"message"` // Mistral, compatible servers
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil {
		return vendorError{}
	}
	var v vendorError
	if e.Error != nil {
		v.Message = jsonText(e.Error.Message)
		v.Code = jsonText(e.Error.Code)
		if v.Code == "" {
			v.Code = e.Error.Type
		}
	}
	if v.Message == "" {
		v.Message = jsonText(e.Message)
		v.Code = jsonText(e.Code)
		if v.Code == "" {
			v.Code = e.Type
		}
	}
	if v.Message == "" {
		v.Message = jsonText(e.Detail)
	}
	v.Permanent = v.Code == openAIQuotaExceeded
	v.TooLarge = status >= 400 && status < 500 && status != http.StatusTooManyRequests &&
		(tooLargeMessage(v.Message) || v.Code == "context_length_exceeded")
	return v
}

// bearer returns a header setter for "Authorization: Bearer key", or nil
// when key is empty.
func bearer(key string) func(http.Header) {
	if key == "" {
		return nil
	}
	return func(h http.Header) { h.Set("Authorization", "Bearer "+key) }
}

// checkDims checks a configured Dims against a model table: known models
// have a native size, which Dims may lower only when the model is
// flexible; unknown models need Dims.
func checkDims(provider, model string, dims int, native map[string]int, flexible bool) error {
	if dims < 0 {
		return fmt.Errorf("%s: dims %d is negative: %w", provider, dims, ErrInvalidConfig)
	}
	n, known := native[model]
	switch {
	case !known && dims == 0:
		return fmt.Errorf("%s: model %q needs Dims set: %w", provider, model, ErrInvalidConfig)
	case known && dims != 0 && dims != n && !flexible:
		return fmt.Errorf("%s: model %q has %d dims, not %d: %w", provider, model, n, dims, ErrInvalidConfig)
	case known && dims > n:
		return fmt.Errorf("%s: model %q has at most %d dims, not %d: %w", provider, model, n, dims, ErrInvalidConfig)
	}
	return nil
}

// checkLimits rejects negative batch limits.
func checkLimits(provider string, maxBatch, maxTokens int) error {
	if maxBatch < 0 || maxTokens < 0 {
		return fmt.Errorf("%s: max batch %d or max tokens %d is negative: %w", provider, maxBatch, maxTokens, ErrInvalidConfig)
	}
	return nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
