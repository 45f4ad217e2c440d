package query

import (
	"time"

	"memindex"
)

// Endpoints, as reported to Metrics.Rejected.
const (
	EndpointSearch = "search"
	EndpointRead   = "read"
)

// Metrics receives the measurements of the service. It is called from the
// service's handlers and pool workers, so an implementation must be safe for
// concurrent use, and quick. ServiceConfig.Metrics nil means none are taken.
// It is never given a namespace.
type Metrics interface {
	// Searched reports a search that ran: resp is its answer (nil when it
	// failed with err; resp.Legs has each leg's time) and took the time
	// from its receipt to the reply.
	Searched(resp *memindex.SearchResponse, took time.Duration, err error)
	// Rejected reports an error reply of endpoint (EndpointSearch or
	// EndpointRead), with a reason of ReasonOf.
	Rejected(endpoint, reason string)
}

// MetricsFuncs adapts functions to Metrics; a nil field is a no-op.
type MetricsFuncs struct {
	SearchedFunc func(resp *memindex.SearchResponse, took time.Duration, err error)
	RejectedFunc func(endpoint, reason string)
}

// Searched calls SearchedFunc.
func (f MetricsFuncs) Searched(resp *memindex.SearchResponse, took time.Duration, err error) {
	if f.SearchedFunc != nil {
		f.SearchedFunc(resp, took, err)
	}
}

// Rejected calls RejectedFunc.
func (f MetricsFuncs) Rejected(endpoint, reason string) {
	if f.RejectedFunc != nil {
		f.RejectedFunc(endpoint, reason)
	}
}

// ReasonOf names the wire code of an error reply for metrics: bad_request,
// not_found, too_large, overloaded, unavailable or internal.
func ReasonOf(code string) string {
	switch code {
	case memindex.CodeBadRequest:
		return "bad_request"
	case memindex.CodeNotFound:
		return "not_found"
	case memindex.CodeTooLarge:
		return "too_large"
	case memindex.CodeOverloaded:
		return "overloaded"
	case memindex.CodeUnavailable:
		return "unavailable"
	}
	return "internal"
}
