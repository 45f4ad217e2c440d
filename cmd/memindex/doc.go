// Command memindex is the one binary of memindex: serve (the worker),
// publish, search, status, dlq and bench. It owns configuration (flags, then
// environment, then defaults), wiring of the concrete types, logging and
// shutdown order; logic worth a unit test lives in the packages it wires.
//
// It also owns how memindex connects to NATS (connect.go: credentials, nkeys,
// tokens, nats CLI contexts and TLS with no fallback to plaintext) and the
// credentials of the embedded server with --auth (auth.go: nkey seeds under
// the data directory, mode 0600). It must never print a password, token,
// seed or provider key: not in usage, logs, errors or status.
//
// It owns observability: the OpenTelemetry SDK and its OTLP/HTTP exporter,
// configured only by the standard OTEL_* variables and off unless they ask
// for traces (telemetry.go; `publish` injects its trace context into each
// event), the slog handler that adds trace_id to records logged under a
// span, and the HTTP endpoints of serve (--http): /metrics from one
// Prometheus registry per node whose gauges are read from the node's status
// at scrape time (metrics.go), /livez, and /readyz, which is 200 only when
// the node is connected, consuming, every partition bound, caught up within
// --ready-lag and not rebuilding, and not draining (http.go). Metric labels
// never carry a namespace.
package main
