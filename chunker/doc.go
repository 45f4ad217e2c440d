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
// It also splits markdown files into sections (see Markdown): cut at ATX
// headings outside fenced code blocks, each section labelled with its heading
// path, and a section over the character budget split between paragraphs and
// code blocks, with overlapping whole lines, never inside a code block. A
// section is a range of the file's lines (or a piece of one over-long line),
// so callers can cite it by line numbers.
//
// It must not do I/O, log, keep global state, know about embeddings, NATS or
// SQLite, or import anything beyond the standard library. Its output is a
// deterministic function of its input: the same messages, config and scope
// always give the same chunks and ids.
package chunker
