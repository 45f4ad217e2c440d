package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"memindex"
)

// Sentinel errors of package query. Errors returned by Engine, Service and
// Client wrap them (or memindex.ErrInvalid and memindex.ErrTooLarge), so test
// them with errors.Is.
var (
	// ErrNotOwned is returned by a Router when this worker owns no shard for
	// the namespace (wire code 404).
	ErrNotOwned = errors.New("namespace not owned by this worker")
	// ErrNotFound is returned by Engine.Read when the file asked for is not
	// stored (wire code 404).
	ErrNotFound = errors.New("not found")
	// ErrNotReady is returned by a Router when the owning shard is not open or
	// not caught up yet (wire code 503).
	ErrNotReady = errors.New("shard not ready")
	// ErrUnavailable is returned by Engine.Search when every leg that ran
	// failed, so there is nothing to answer with (wire code 503).
	ErrUnavailable = errors.New("search unavailable")
	// ErrOverloaded is matched by a *RemoteError when a worker had too many
	// searches pending and refused one (wire code 429).
	ErrOverloaded = errors.New("worker overloaded")
	// ErrNoWorker is returned by Client when no worker subscribes to the
	// subject: nothing is serving.
	ErrNoWorker = errors.New("no memindex worker is serving; start one with `memindex serve`")
	// ErrNoBackend is returned by every call of the "none" backend of Open
	// (and of a Manager after Close): no search backend is configured.
	ErrNoBackend = errors.New("no search backend configured; choose one with backend remote, local or qmd")
	// ErrUnsupported is returned by a Manager call its backend cannot
	// answer: a session read or a vector probe of the qmd backend.
	ErrUnsupported = errors.New("not supported by this backend")
)

// RemoteError is an error reply of the memindex service: the code of its
// Nats-Service-Error-Code header (one of the memindex.Code* constants) and
// the message a person can act on.
type RemoteError struct {
	Code    string
	Message string
	// RetryAfter is when a refused request (429) may be tried again, from
	// the reply's Retry-After header; 0 when the reply named none.
	RetryAfter time.Duration
}

// Error returns "memindex <code>: <message>".
func (e *RemoteError) Error() string { return fmt.Sprintf("memindex %s: %s", e.Code, e.Message) }

// Unwrap returns the sentinel the code stands for, so errors.Is works:
// memindex.ErrInvalid for 400, ErrNotOwned for 404, memindex.ErrTooLarge for
// 413, ErrOverloaded for 429 and ErrUnavailable for 503; nil otherwise.
func (e *RemoteError) Unwrap() error { return sentinelFor(e.Code) }

// Is reports whether target is a *RemoteError with the same code, so
// errors.Is(err, &RemoteError{Code: memindex.CodeOverloaded}) works too.
func (e *RemoteError) Is(target error) bool {
	t, ok := target.(*RemoteError)
	return ok && t.Code == e.Code
}

func sentinelFor(code string) error {
	switch code {
	case memindex.CodeBadRequest:
		return memindex.ErrInvalid
	case memindex.CodeNotFound:
		return ErrNotOwned
	case memindex.CodeTooLarge:
		return memindex.ErrTooLarge
	case memindex.CodeOverloaded:
		return ErrOverloaded
	case memindex.CodeUnavailable:
		return ErrUnavailable
	}
	return nil
}

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
