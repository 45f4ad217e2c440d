// Package mcpserver is memindex's Model Context Protocol server: the tools
// an agent calls (memory_search, memory_get, memory_add, memory_forget,
// memory_status) on top of the same NATS requests every other memindex
// command sends, built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), which does the protocol, the
// stdio and streamable HTTP transports, and the input schemas (inferred from
// the tools' input structs and their jsonschema tags, then narrowed by
// schema.go).
//
// It owns:
//
//   - Server (server.go): Config (the default namespace, the namespaces a
//     call may name instead, how long memory_add and memory_forget wait for
//     the workers to apply what they published), New over a NATS
//     connection, Run over stdio (or any SDK transport), and the namespace
//     rule every tool applies.
//   - HTTP (http.go): Handler, the streamable HTTP endpoint behind an
//     optional bearer token, and ListenAndServe with a bounded shutdown.
//   - The tools, one file each: search.go, get.go, add.go (memory_add: a
//     record.upserted event through client.Publish, the wait for it with
//     the remote Manager's Sync, the record id rule RecordID), forget.go
//     (record.deleted, session.deleted), status.go; their input schemas
//     (schema.go: inferred from the input structs, narrowed by enums and
//     bounds).
//   - Tool errors (errors.go): every failure of a call is an MCP tool error
//     (a result with isError) whose text carries the worker's reason: the
//     field of a 400, a 404, the Retry-After of a 429, the "retry" of a 503,
//     no worker serving, NATS unreachable. A protocol error is kept for
//     what is wrong with the protocol itself (an unknown tool).
//
// It must not import memindex/store, consumer, embedder, query or chunker,
// nor anything that needs cgo (TestBuildsWithoutCgo): like package client,
// whose Client it calls, it builds with CGO_ENABLED=0. It must not read
// flags or the environment, print, or configure logging: cmd/memindex/mcp.go
// does, and hands it a connection.
package mcpserver
