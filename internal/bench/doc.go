// Package bench is the harness behind `memindex bench`: it owns the suites
// (ingest end to end, the hot namespace beside its floors, the ingest
// stages alone, search latency over NATS beside plain FTS5 bm25 and a
// float32 scan of the same chunks with the start-up of their shard
// (search.go), concurrency over NATS, the vector leg
// four ways, LoCoMo search beside plain FTS5 bm25 and a float32 scan, and a
// cluster of workers in one process), the Report they fill, its markdown
// tables and the growth plot (tables.md, growth.png, report.json), the
// merge of saved reports, and the hot suite's loads written as JSONL files
// for `memindex publish` (WriteHotEvents, hot_events.go).
//
// It starts nodes and NATS servers only through the harness.Hooks the
// binary hands it, so it never assembles a node itself; it must not read
// flags or the environment (one exception: MEMINDEX_BENCH_VECTOR_DATA picks
// the vector suite's data when VectorConfig.Data is empty), configure
// logging, or print anywhere but the writers and Log it is given. Its
// figures are measurements: nothing here is a timing assertion.
package bench
