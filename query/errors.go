package query

import (
	"context"
	"errors"

	"memindex"
)

// Sentinel errors of package query. Errors returned by Engine and Service
// wrap them (or memindex.ErrInvalid and memindex.ErrTooLarge), so test them
// with errors.Is. Those that cross the wire are the root package's, so a
// client's *client.RemoteError matches the same values.
var (
	// ErrNotOwned is returned by a Router when this worker owns no shard for
	// the namespace (wire code 404).
	ErrNotOwned = memindex.ErrNotOwned
	// ErrNotFound is returned by Engine.Read when the file asked for is not
	// stored (wire code 404).
	ErrNotFound = memindex.ErrNotFound
	// ErrNotReady is returned by a Router when the owning shard is not open or
	// not caught up yet (wire code 503).
	ErrNotReady = errors.New("shard not ready")
	// ErrUnavailable is returned by Engine.Search when every leg that ran
	// failed, so there is nothing to answer with (wire code 503).
	ErrUnavailable = memindex.ErrUnavailable
	// ErrOverloaded is returned by the Service when it has too many searches
	// pending or the namespace is over its rate (wire code 429).
	ErrOverloaded = memindex.ErrOverloaded
)

// codeFor maps an error to its wire code. It is the only place errors meet
// codes on the serving side.
func codeFor(err error) string {
	switch {
	case errors.Is(err, memindex.ErrTooLarge):
		return memindex.CodeTooLarge
	case errors.Is(err, memindex.ErrInvalid):
		return memindex.CodeBadRequest
	case errors.Is(err, ErrNotOwned), errors.Is(err, ErrNotFound):
		return memindex.CodeNotFound
	case errors.Is(err, ErrOverloaded):
		return memindex.CodeOverloaded
	case errors.Is(err, ErrNotReady), errors.Is(err, ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return memindex.CodeUnavailable
	}
	return memindex.CodeInternal
}
