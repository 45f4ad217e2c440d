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
// bench (bench*.go) measures in one run: ingest end to end and per stage,
// search over NATS one request at a time and under 1, 8 and 64 concurrent
// clients, and the vector leg four ways (the shard's in-memory scan, a bare
// sqlite-vec vec0 table, JSON vectors decoded in process, a plain Go scan)
// over the same seeded random vectors, whose files it caches between runs;
// it writes report.json, tables.md and growth.png to --out. The cluster
// suite (bench_cluster.go; only with --suite cluster) starts 1, 2 and 3
// workers in process on static partition splits of a fresh stream and
// measures their ingest rate (live, and draining a backlog) with the
// process's CPU time, search latency
// direct and routed through a worker that relays to the holder, and how
// long a dynamic group started cold takes to spread its partitions.
package main
