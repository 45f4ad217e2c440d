package embedder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Defaults of the Ollama embed API. Ollama documents no request limits;
// these keep one request's work and answer moderate.
const (
	ollamaProvider     = "ollama"
	ollamaHost         = "http://127.0.0.1:11434"
	ollamaDefaultModel = "nomic-embed-text"
	ollamaMaxItems     = 256
	ollamaMaxTokens    = 65_536
)

// ollamaModelDims are the sizes of common Ollama embedding models, by name
// without the tag.
var ollamaModelDims = map[string]int{
	"nomic-embed-text":       768,
	"mxbai-embed-large":      1024,
	"all-minilm":             384,
	"snowflake-arctic-embed": 1024,
	"bge-m3":                 1024,
	"bge-large":              1024,
	"embeddinggemma":         768,
}

// OllamaConfig configures a local Ollama server.
type OllamaConfig struct {
	// Host is the server; empty means "http://127.0.0.1:11434".
	Host string
	// Model is the model name, with or without a tag; empty means
	// "nomic-embed-text" (768 dims).
	Model string
	// Dims is the vector length; when set it is sent as "dimensions". It is
	// required for models not listed.
	Dims int
	// MaxBatch is the most texts per request; 0 means 256.
	MaxBatch int
	// MaxTokens is the most estimated tokens per request; 0 means 65536.
	MaxTokens int
	// HTTP sets timeouts and retries.
	HTTP HTTPConfig
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c OllamaConfig) Validate() error {
	_, err := c.resolve()
	return err
}

func (c OllamaConfig) resolve() (OllamaConfig, error) {
	host, err := baseURL(c.Host, ollamaHost, false)
	if err != nil {
		return c, fmt.Errorf("ollama: %w", err)
	}
	c.Host = host
	if c.Model == "" {
		c.Model = ollamaDefaultModel
	}
	name, _, _ := strings.Cut(c.Model, ":")
	// Ollama's "dimensions" truncates, so any size up to the native one works.
	if err := checkDims(ollamaProvider, name, c.Dims, ollamaModelDims, true); err != nil {
		return c, err
	}
	if c.Dims == 0 {
		c.Dims = ollamaModelDims[name]
	}
	if err := checkLimits(ollamaProvider, c.MaxBatch, c.MaxTokens); err != nil {
		return c, err
	}
	return c, c.HTTP.Validate()
}

// Ollama embeds texts with a local Ollama server's /api/embed. It is safe
// for concurrent use.
type Ollama struct {
	cfg      OllamaConfig
	sendDims bool
	limits   limits
	url      string
	http     *httpClient
}

var _ Embedder = (*Ollama)(nil)

// NewOllama returns an Ollama embedder for cfg, or an error wrapping
// ErrInvalidConfig.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	sendDims := cfg.Dims != 0
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("new ollama embedder: %w", err)
	}
	return &Ollama{
		cfg:      cfg,
		sendDims: sendDims,
		limits:   limits{items: orDefault(cfg.MaxBatch, ollamaMaxItems), tokens: orDefault(cfg.MaxTokens, ollamaMaxTokens)},
		url:      cfg.Host + "/api/embed",
		http:     newHTTPClient(ollamaProvider, cfg.HTTP, "", nil, parseOllamaError),
	}, nil
}

// Info returns the provider "ollama", the model, its Dims and the host.
func (o *Ollama) Info() Info {
	return Info{Provider: ollamaProvider, Model: o.cfg.Model, Dims: o.cfg.Dims, BaseURL: o.cfg.Host}
}

// Embed returns one unit vector per text, in order; Ollama truncates texts
// longer than the model's context. The Kind is ignored (models such as
// nomic-embed-text expect task prefixes, which this does not add). Errors
// wrap ErrBadVector, or are a *ProviderError, or wrap the context's error.
func (o *Ollama) Embed(ctx context.Context, req Request) ([][]float32, error) {
	return embedBatches(ctx, req.Texts, o.limits, o.send)
}

// ollamaRequest is the body of POST /api/embed.
type ollamaRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Truncate   bool     `json:"truncate"`
	Dimensions int      `json:"dimensions,omitempty"`
}

// ollamaResponse is its answer: vectors in input order.
type ollamaResponse struct {
	Embeddings [][]float32 `json:"embeddings"`
}

func (o *Ollama) send(ctx context.Context, texts []string) ([][]float32, error) {
	body := ollamaRequest{Model: o.cfg.Model, Input: texts, Truncate: true}
	if o.sendDims {
		body.Dimensions = o.cfg.Dims
	}
	var resp ollamaResponse
	if err := o.http.post(ctx, o.url, body, &resp); err != nil {
		return nil, err
	}
	return finish(ollamaProvider, resp.Embeddings, len(texts), o.cfg.Dims)
}

// parseOllamaError reads Ollama's {"error": "..."}.
func parseOllamaError(status int, body []byte) vendorError {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return vendorError{}
	}
	v := vendorError{Message: jsonText(e.Error)}
	v.TooLarge = status >= 400 && status < 500 && status != http.StatusTooManyRequests && tooLargeMessage(v.Message)
	return v
}
