package embedder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults and limits of the Gemini API's batchEmbedContents.
const (
	geminiProvider     = "gemini"
	geminiBaseURL      = "https://generativelanguage.googleapis.com"
	geminiDefaultModel = "gemini-embedding-001"
	geminiDefaultDims  = 768
	geminiMaxItems     = 100
	// geminiMaxTokens is 100 texts of 2048 tokens, the longest input
	// gemini-embedding-001 reads.
	geminiMaxTokens = 204_800
)

// geminiModelDims are the native sizes of Gemini embedding models; all
// take "outputDimensionality" to truncate.
var geminiModelDims = map[string]int{
	"gemini-embedding-001": 3072,
	"text-embedding-004":   768,
}

// GeminiConfig configures the Gemini API's embeddings.
type GeminiConfig struct {
	// APIKey is sent in the x-goog-api-key header; it is required with the
	// default BaseURL.
	APIKey string
	// BaseURL is the server; empty means
	// "https://generativelanguage.googleapis.com".
	BaseURL string
	// Model is the model name, with or without "models/"; empty means
	// "gemini-embedding-001".
	Model string
	// Dims is the vector length, sent as "outputDimensionality"; 0 means
	// 768. Gemini does not normalise truncated vectors; Embed does.
	Dims int
	// MaxBatch is the most texts per request; 0 means 100, the API's limit.
	MaxBatch int
	// MaxTokens is the most estimated tokens per request; 0 means 204800.
	MaxTokens int
	// HTTP sets timeouts and retries.
	HTTP HTTPConfig
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c GeminiConfig) Validate() error {
	_, err := c.resolve()
	return err
}

func (c GeminiConfig) resolve() (GeminiConfig, error) {
	if c.APIKey == "" && (c.BaseURL == "" || c.BaseURL == geminiBaseURL) {
		return c, fmt.Errorf("gemini: no api key: %w", ErrInvalidConfig)
	}
	base, err := baseURL(c.BaseURL, geminiBaseURL, false)
	if err != nil {
		return c, fmt.Errorf("gemini: %w", err)
	}
	c.BaseURL = base
	c.Model = strings.TrimPrefix(c.Model, "models/")
	if c.Model == "" {
		c.Model = geminiDefaultModel
	}
	if strings.ContainsAny(c.Model, "/:?#") {
		return c, fmt.Errorf("gemini: model %q is not a model name: %w", c.Model, ErrInvalidConfig)
	}
	if _, known := geminiModelDims[c.Model]; known && c.Dims == 0 {
		c.Dims = geminiDefaultDims
	}
	if err := checkDims(geminiProvider, c.Model, c.Dims, geminiModelDims, true); err != nil {
		return c, err
	}
	if c.MaxBatch > geminiMaxItems {
		return c, fmt.Errorf("gemini: max batch %d is over the API's %d: %w", c.MaxBatch, geminiMaxItems, ErrInvalidConfig)
	}
	if err := checkLimits(geminiProvider, c.MaxBatch, c.MaxTokens); err != nil {
		return c, err
	}
	return c, c.HTTP.Validate()
}

// Gemini embeds texts with the Gemini API's batchEmbedContents. It is safe
// for concurrent use; its requests share one rate-limit cool-down.
type Gemini struct {
	cfg    GeminiConfig
	limits limits
	url    string
	http   *httpClient
}

var _ Embedder = (*Gemini)(nil)

// NewGemini returns a Gemini embedder for cfg, or an error wrapping
// ErrInvalidConfig.
func NewGemini(cfg GeminiConfig) (*Gemini, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("new gemini embedder: %w", err)
	}
	key := cfg.APIKey
	var header func(http.Header)
	if key != "" {
		header = func(h http.Header) { h.Set("x-goog-api-key", key) }
	}
	return &Gemini{
		cfg:    cfg,
		limits: limits{items: orDefault(cfg.MaxBatch, geminiMaxItems), tokens: orDefault(cfg.MaxTokens, geminiMaxTokens)},
		url:    cfg.BaseURL + "/v1beta/models/" + url.PathEscape(cfg.Model) + ":batchEmbedContents",
		http:   newHTTPClient(geminiProvider, cfg.HTTP, key, header, parseGeminiError),
	}, nil
}

// Info returns the provider "gemini", the model (without "models/"), its
// Dims and the base URL.
func (g *Gemini) Info() Info {
	return Info{Provider: geminiProvider, Model: g.cfg.Model, Dims: g.cfg.Dims, BaseURL: g.cfg.BaseURL}
}

// Embed returns one unit vector per text, in order. KindQuery is sent as
// taskType RETRIEVAL_QUERY, anything else as RETRIEVAL_DOCUMENT. Errors wrap
// ErrBadVector, or are a *ProviderError, or wrap the context's error.
func (g *Gemini) Embed(ctx context.Context, req Request) ([][]float32, error) {
	task := "RETRIEVAL_DOCUMENT"
	if req.Kind == KindQuery {
		task = "RETRIEVAL_QUERY"
	}
	return embedBatches(ctx, req.Texts, g.limits, func(ctx context.Context, texts []string) ([][]float32, error) {
		return g.send(ctx, texts, task)
	})
}

// geminiRequest is the body of POST models/{model}:batchEmbedContents.
type geminiRequest struct {
	Requests []geminiEmbedRequest `json:"requests"`
}

type geminiEmbedRequest struct {
	Model                string        `json:"model"`
	Content              geminiContent `json:"content"`
	TaskType             string        `json:"taskType"`
	OutputDimensionality int           `json:"outputDimensionality,omitempty"`
}

type geminiContent struct {
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text string `json:"text"`
}

// geminiResponse is its answer: vectors in input order.
type geminiResponse struct {
	Embeddings []struct {
		Values []float32 `json:"values"`
	} `json:"embeddings"`
}

func (g *Gemini) send(ctx context.Context, texts []string, task string) ([][]float32, error) {
	body := geminiRequest{Requests: make([]geminiEmbedRequest, len(texts))}
	for i, t := range texts {
		body.Requests[i] = geminiEmbedRequest{
			Model:                "models/" + g.cfg.Model,
			Content:              geminiContent{Parts: []geminiPart{{Text: t}}},
			TaskType:             task,
			OutputDimensionality: g.cfg.Dims,
		}
	}
	var resp geminiResponse
	if err := g.http.post(ctx, g.url, body, &resp); err != nil {
		return nil, err
	}
	vecs := make([][]float32, len(resp.Embeddings))
	for i, e := range resp.Embeddings {
		vecs[i] = e.Values
	}
	return finish(geminiProvider, vecs, len(texts), g.cfg.Dims)
}

// parseGeminiError reads Google's {"error":{"code","message","status",
// "details"}}: a RetryInfo detail gives the wait, and a per-day quota
// failure is permanent.
func parseGeminiError(status int, body []byte) vendorError {
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
				Violations []struct {
					QuotaID string `json:"quotaId"`
				} `json:"violations"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return vendorError{}
	}
	v := vendorError{Code: e.Error.Status, Message: e.Error.Message}
	for _, d := range e.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if r, err := time.ParseDuration(d.RetryDelay); err == nil {
				v.RetryAfter = r
			}
		}
		for _, q := range d.Violations {
			if strings.Contains(q.QuotaID, "PerDay") {
				v.Permanent = true
			}
		}
	}
	v.TooLarge = status >= 400 && status < 500 && status != http.StatusTooManyRequests && tooLargeMessage(v.Message)
	return v
}
