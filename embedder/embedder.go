package embedder

import "context"

// Kind says what a text is embedded for; some providers embed queries and
// documents differently.
type Kind string

// Kinds of input.
const (
	KindDocument Kind = "document"
	KindQuery    Kind = "query"
)

// Request asks for the vectors of Texts, in order.
type Request struct {
	Texts []string
	Kind  Kind
}

// Info identifies an embedder's vector space: vectors from embedders with a
// different Info are not comparable.
type Info struct {
	Provider string
	Model    string
	Dims     int
	BaseURL  string
}

// Embedder turns texts into vectors. Embed returns exactly one L2-normalised
// vector of Info().Dims per text, in order, or an error.
type Embedder interface {
	Embed(ctx context.Context, req Request) ([][]float32, error)
	Info() Info
}

// Func adapts a function to Embedder.
type Func struct {
	EmbedFunc func(ctx context.Context, req Request) ([][]float32, error)
	Desc      Info
}

// Embed calls f.EmbedFunc.
func (f Func) Embed(ctx context.Context, req Request) ([][]float32, error) {
	return f.EmbedFunc(ctx, req)
}

// Info returns f.Desc.
func (f Func) Info() Info { return f.Desc }
