// Command memindex is the one binary of memindex: serve (the worker),
// publish, search, status, dlq, rebuild, snapshot, bench, eval and doctor.
// It owns configuration (flags, then environment, then the YAML file of
// --config / MEMINDEX_CONFIG, then defaults: config.go, which also prints
// `memindex config show` with each value's source and secrets redacted) and
// printing; the work is the packages'. serve (serve.go) registers its flags
// with the defaults of node.DefaultConfig, parses them, and runs
// node.Open and Node.Run; rebuild and snapshot call node.Rebuild and
// node.Snapshot and print their progress. Logic worth a unit test lives in
// the packages it wires.
//
// `memindex doctor` (doctor.go) checks a deployment from the outside: NATS
// connectivity, JetStream, the streams' and consumers' configuration against
// what consumer sets (consumer.EventStreamDrift and friends), the server's
// sync_interval when a system user can see it, the shard files of --data
// (store.CheckFile: read-only beside a live worker, which holds the data
// directory's lock; never opened as shards, so nothing is migrated) and one
// embedding from the configured provider; each failure says what to do.
//
// The NATS connection flags (conn.go) fill internal/natsconn.Config, which
// owns connecting; the embedded server's --auth credentials are the node's.
// It must never print a password, token, seed or provider key: not in
// usage, logs, errors or status. Provider keys come from the environment
// only (providerFlags.config: the vendors' variables or NAME_FILE).
//
// It owns the process-wide parts of observability: the OpenTelemetry SDK
// and its OTLP/HTTP exporter, configured only by the standard OTEL_*
// variables and off unless they ask for traces (telemetry.go; `publish`
// injects its trace context into each event), and the slog handler that
// adds trace_id to records logged under a span. The HTTP endpoints and
// metrics are the node's (package node).
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
