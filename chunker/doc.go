// Package chunker owns the pure splitting of conversation sessions into
// retrieval chunks: one chunk per message, a message too long for the token
// budget split into pieces, the token estimate that decides it
// (EstimateTokens), each chunk's Context, and the stable id of each chunk.
//
// Its key invariant is prefix stability: a message's chunks depend only on it
// and the few messages before it that give its Context, so appending messages
// to a session only adds chunks, and a session's tail can be re-chunked from
// any message given the messages before it (see SessionAfter).
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
