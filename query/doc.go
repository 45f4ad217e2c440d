// Package query answers searches: it runs the keyword and vector legs of a
// hybrid search against the shard that owns a namespace, fuses them (RRF or
// weighted), filters and scores the hits, explains them on request, and
// serves the whole over the NATS micro service "memindex". The Go client of
// that service is package client, which must not import this one.
//
// What it returns is what an agent pays for: one hit per unit — a whole
// message for sessions (however it was cut for indexing), a file section, a
// record — never the same twice in a response, filled in rank order within
// the request's budget (messages or tokens), with Around neighbours attached
// as context, not hits (budget.go).
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
// Local (backend_local.go) is the local backend of client.Open, set as
// client.LocalConfig.Opener: shard files opened read-only in process
// (store.Config.ReadOnly: it never writes a shard) under an Engine. It lives
// here, not in package client, because reading shards takes cgo SQLite.
//
// Routing (route.go): every worker receives memindex.search.<ns> and
// memindex.read.<ns> in one queue group. With ServiceConfig.Partitions and
// Holds set, a worker answers a namespace whose partition it holds and has
// caught up on; it forwards any other request to memindex.psearch.<p>.<ns>
// (memindex.pread.<p>.<ns>), which the ready holders of p answer in one
// queue group (Service.Serve), and relays the answer, or a 503 naming the
// partition when nobody holds it ready. client.Client, once it knows P,
// sends to the per-partition subject itself. Routing decides where a
// request runs, never what it sees.
//
// The service bounds what it holds under load: searches beyond the pool and
// MaxPending are refused 429 at once, and with RatePerNamespace each
// namespace has a token bucket for its searches and reads (ratelimit.go;
// over it: 429 with a Retry-After header, which the client returns as
// client.RemoteError.RetryAfter), kept in a map of at most MaxNamespaces buckets,
// least recently used dropped first. ServiceConfig.Limits caps query size
// (413) and k (400).
//
// Degraded is visible: a leg that fails or times out does not fail the
// search; the response's Legs and Degraded fields say which leg answered and
// why the other did not. Only when every leg that ran failed is the search an
// error.
package query
