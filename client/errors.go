package client

import (
	"errors"
	"fmt"
	"time"

	"memindex"
)

// Sentinel errors of package client. Errors of a Client, a Manager and
// Publish wrap them or the root package's wire sentinels (memindex.ErrInvalid
// 400, memindex.ErrNotOwned 404, memindex.ErrTooLarge 413,
// memindex.ErrOverloaded 429, memindex.ErrUnavailable 503), so test them with
// errors.Is.
var (
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
// memindex.ErrInvalid for 400, memindex.ErrNotOwned for 404,
// memindex.ErrTooLarge for 413, memindex.ErrOverloaded for 429 and
// memindex.ErrUnavailable for 503; nil otherwise.
func (e *RemoteError) Unwrap() error {
	switch e.Code {
	case memindex.CodeBadRequest:
		return memindex.ErrInvalid
	case memindex.CodeNotFound:
		return memindex.ErrNotOwned
	case memindex.CodeTooLarge:
		return memindex.ErrTooLarge
	case memindex.CodeOverloaded:
		return memindex.ErrOverloaded
	case memindex.CodeUnavailable:
		return memindex.ErrUnavailable
	}
	return nil
}

// Is reports whether target is a *RemoteError with the same code, so
// errors.Is(err, &RemoteError{Code: memindex.CodeOverloaded}) works too.
func (e *RemoteError) Is(target error) bool {
	t, ok := target.(*RemoteError)
	return ok && t.Code == e.Code
}
