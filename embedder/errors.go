package embedder

import "errors"

// Sentinel errors of the embedder package. Callers test for them with
// errors.Is; the returned errors wrap them with the details.
var (
	// ErrBadVector is wrapped when an embedder returns vectors that cannot be
	// used: the wrong count, the wrong length, NaN or Inf components, or an
	// all-zero vector. It is returned by CheckVectors, and by Batched and
	// Cached when their inner embedder misbehaves. Retrying the same request
	// is unlikely to help.
	ErrBadVector = errors.New("bad vector")

	// ErrInvalidConfig is wrapped by the Validate methods of the config
	// structs when a setting is out of range.
	ErrInvalidConfig = errors.New("invalid embedder config")
)
