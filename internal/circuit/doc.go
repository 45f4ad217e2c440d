// Package circuit is the one circuit breaker of memindex: the embedder's
// provider breaker (embedder.Breaker) and the client's primary-or-fallback
// breaker (client's fallback.go) are both a Breaker from here, each mapping
// its own errors to an Outcome and writing its own messages.
//
// A Breaker counts consecutive failures; Config.Failures of them open it
// for Config.Cooldown, during which Allow refuses every call. The first
// call after the cool-down is let through as the half-open probe while the
// others are refused; the probe's success closes the breaker, its failure
// opens it for another cool-down, and a probe that says nothing about the
// protected service's health (Release: the caller gave up, the request was
// invalid) lets the next call probe. An outcome reported for a call that
// began before the breaker last changed state is ignored. The clock is
// Config.Now, so tests drive the cool-down without waiting.
//
// Why not github.com/sony/gobreaker/v2 (v2.4.0's source read against what
// both users need): it expresses the one-probe half-open state (MaxRequests 1,
// IsSuccessful, IsExcluded releasing the probe), but it reads time.Now
// itself. client.BreakerConfig.Now is public API (a Cache keys managers on
// it) and the client's failover test drives a one-minute cool-down over a
// real nats-server, where testing/synctest cannot fake the time; with
// gobreaker both would wait out real cool-downs. It also does not expose
// when an open breaker lets its probe through, which status
// (breakerOpenUntil) and the "open until" errors report.
//
// It must not import anything outside the standard library, write logs or
// know what it protects: client builds with CGO_ENABLED=0 and imports it.
package circuit
