// Package query answers searches: it runs the keyword and vector legs of a
// hybrid search against the shard that owns a namespace, fuses them (RRF or
// weighted), filters and scores the hits, explains them on request, and
// serves the whole over the NATS micro service "memindex". It also holds the
// Go client of that service.
//
// It owns ranking, not storage: it sees a shard only through the small
// Searcher interface (which *store.Shard satisfies) and must not know the
// SQLite schema, open a shard, or consume events. It never returns a chunk of
// another namespace than the one asked, whatever a Searcher answers.
//
// The service is observable through ServiceConfig.Metrics (metrics.go: each
// search's total and per-leg time, each error reply by reason, never a
// namespace) and ServiceConfig.TracerProvider (trace.go: a search span, the
// child of the requester's traceparent header); both are off when nil.
//
// Degraded is visible: a leg that fails or times out does not fail the
// search; the response's Legs and Degraded fields say which leg answered and
// why the other did not. Only when every leg that ran failed is the search an
// error.
package query
