// Command memindex is the one binary of memindex: serve (the worker),
// publish, search, status, dlq, rebuild, snapshot, bench, eval and doctor.
// It owns flag registration, wiring and printing; the work is the
// packages'. Configuration is flags, then environment, then the YAML file
// of --config / MEMINDEX_CONFIG, then defaults: internal/cliconfig layers
// them and redacts secrets; config.go registers --config, says which
// commands read it (not bench or eval) and prints `memindex config show`.
// serve (serve.go) registers its flags with the defaults of
// node.DefaultConfig, parses them, and runs node.Open and Node.Run; rebuild
// and snapshot call node.Rebuild and node.Snapshot and print their
// progress; search chooses its backends with client.Choice (passing
// query.Local{} as the local opener) and status prints client.Cluster.
// Logic worth a unit test lives in the packages it wires; the tests here
// run commands end to end.
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
// It installs the process-wide parts of observability that internal/telemetry
// builds: the OpenTelemetry SDK and its OTLP/HTTP exporter, configured only
// by the standard OTEL_* variables and off unless they ask for traces
// (`publish` injects its send span's context into each event), and the slog
// handler that adds trace_id to records logged under a span. The HTTP
// endpoints and metrics are the node's (package node).
//
// bench and eval (bench.go, eval.go) parse their flags, run
// internal/bench and internal/evalrun and print the reports; they start
// in-process nodes through harness.Nodes; eval's --tune goes through
// evalrun.Tunable.
package main
