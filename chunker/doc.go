// Package chunker owns the pure splitting of conversation sessions into
// retrieval chunks: packing consecutive messages into overlapping windows of a
// token budget, splitting a message too long for one window into pieces, the
// token estimate that decides both (EstimateTokens), and the stable id of each
// chunk.
//
// Its key invariant is prefix stability: a window depends only on the message
// it starts at and the messages after it, so appending messages to a session
// changes only its last chunk and the ones after, and a session can be
// re-chunked from the start of its last stored chunk (see Session).
//
// It must not do I/O, log, keep global state, know about embeddings, NATS or
// SQLite, or import anything beyond the standard library. Its output is a
// deterministic function of its input: the same messages, config and scope
// always give the same chunks and ids.
package chunker
