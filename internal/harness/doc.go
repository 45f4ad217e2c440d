// Package harness is the seam through which `memindex bench` and `memindex
// eval` start and drive in-process nodes: the Node they need (its NATS
// connection, partitions, shards, embedder, applied sequences, readiness),
// the NodeSpec they start one with, the Hooks the binary hands them
// (start a node, start a bare NATS server, turn a JSONL line into an event
// message by `memindex publish`'s rule), and what both do with a node:
// publish a corpus and wait until every partition applied it (Ingest),
// count the shards' rows (Count), wait for every vector (WaitVectors).
//
// It must not assemble a node itself (the binary's adapter does, through
// Hooks.StartNode), read flags or the environment, print, or write to a
// node's shards (it publishes to the stream and reads counts; bench's
// search suites fill a namespace's shard themselves, on purpose).
package harness
