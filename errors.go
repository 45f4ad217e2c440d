package memindex

import (
	"errors"
	"fmt"
)

// Sentinel errors of the wire contract.
var (
	// ErrInvalid is wrapped by every validation error: the input can never be
	// accepted as it is (wire code 400).
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge is wrapped when an input exceeds a size limit (wire code 413).
	ErrTooLarge = errors.New("too large")
	// ErrUnsupported is wrapped when an event type is known but not handled by
	// this worker version.
	ErrUnsupported = errors.New("unsupported")
	// ErrNotOwned is wrapped when the worker asked owns no shard for the
	// namespace (wire code 404).
	ErrNotOwned = errors.New("namespace not owned by this worker")
	// ErrNotFound is wrapped when the memory file a read asks for is not
	// stored (wire code 404).
	ErrNotFound = errors.New("not found")
	// ErrOverloaded is wrapped when a worker refused a request: too many
	// pending, or the namespace over its rate (wire code 429, with
	// RetryAfterHeader).
	ErrOverloaded = errors.New("worker overloaded")
	// ErrUnavailable is wrapped when nothing could answer now and asking
	// again later may: every search leg failed, the shard is not ready, the
	// connection is down (wire code 503).
	ErrUnavailable = errors.New("search unavailable")
)

// Error codes carried in micro error headers (Nats-Service-Error-Code).
const (
	CodeBadRequest  = "400"
	CodeNotFound    = "404"
	CodeTooLarge    = "413"
	CodeOverloaded  = "429"
	CodeInternal    = "500"
	CodeUnavailable = "503"
)

// RetryAfterHeader is the header of a 429 reply that says, in whole
// seconds, when the request may be tried again.
const RetryAfterHeader = "Retry-After"

// FieldError is a validation error that names the offending field.
type FieldError struct {
	Field  string // JSON field name, e.g. "sessionKey"
	Reason string // what is wrong, e.g. "is required"
	Err    error  // ErrInvalid or ErrTooLarge
}

// Error returns "field <name>: <reason>".
func (e *FieldError) Error() string { return fmt.Sprintf("field %s: %s", e.Field, e.Reason) }

// Unwrap returns ErrInvalid or ErrTooLarge.
func (e *FieldError) Unwrap() error {
	if e.Err == nil {
		return ErrInvalid
	}
	return e.Err
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

func tooLarge(field string, n, limit int) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf("is %d bytes, over the limit of %d", n, limit), Err: ErrTooLarge}
}
