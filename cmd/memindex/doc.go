// Command memindex is the one binary of memindex: serve (the worker),
// publish, search, status, dlq and bench. It owns configuration (flags, then
// environment, then the YAML file of --config / MEMINDEX_CONFIG, then
// defaults: config.go, which also prints `memindex config show` with each
// value's source and secrets redacted), wiring of the concrete types, logging
// and shutdown order; logic worth a unit test lives in the packages it wires.
//
// `memindex doctor` (doctor.go) checks a deployment from the outside: NATS
// connectivity, JetStream, the streams' and consumers' configuration against
// what consumer sets (consumer.EventStreamDrift and friends), the server's
// sync_interval when a system user can see it, the shard files of --data
// (store.CheckFile: read-only beside a live worker, which holds the data
// directory's lock; never opened as shards, so nothing is migrated) and one
// embedding from the configured provider; each failure says what to do.
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
//
// bench and eval (bench.go, eval.go) parse their flags, run
// internal/bench and internal/evalrun and print the reports; they start
// in-process nodes through the adapter of benchnode.go (harness.Hooks).
package main
