package memindex

import "strings"

// HeaderTraceState carries vendor trace state next to HeaderTraceParent.
const HeaderTraceState = "tracestate"

// HeaderCarrier carries W3C trace context (traceparent, tracestate) in NATS
// message headers; it satisfies OpenTelemetry's propagation.TextMapCarrier.
// A nats.Header or a micro.Headers converts to it as it is:
// memindex.HeaderCarrier(msg.Header).
//
// NATS headers are case-sensitive, unlike HTTP's, and publishers spell the
// key as they like: Get finds a key whatever its case (an exact match
// first), and Set writes the lowercase key, removing any other spelling of
// it, so the next hop finds exactly one. Set needs a non-nil map.
type HeaderCarrier map[string][]string

// Get returns the first value of key, matched without regard to case, or "".
func (c HeaderCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set stores value under the lowercase key, replacing every spelling of it.
func (c HeaderCarrier) Set(key, value string) {
	lower := strings.ToLower(key)
	for k := range c {
		if k != lower && strings.EqualFold(k, key) {
			delete(c, k)
		}
	}
	c[lower] = []string{value}
}

// Keys returns the header keys as they are spelled.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
