// Package eval measures retrieval quality in a way that cannot flatter: it
// owns reading an evaluation corpus (a directory with one *.events.jsonl and
// one *.queries.jsonl in LoCoMo's format), splitting its conversations into
// two halves, the strict scorer (an agent pays for every message of every
// hit it pastes, in rank order, repeats included, and a hit that does not fit
// the budget ends the count), the plain baseline (FTS5 BM25 over single
// messages in its own SQLite file), the choice of a tuned setting on one
// half and its report on the other, and the report structs that
// `memindex eval` prints or encodes as JSON.
//
// It must not start nodes, talk NATS, read flags or the environment, or
// print: cmd/memindex runs the searches (client.Client over NATS) and hands
// the hits here. The only SQLite it opens is the baseline's own file; it
// never reads a memindex shard.
package eval
