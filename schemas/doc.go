// Package schemas holds the JSON Schemas (draft 2020-12) of every message
// on memindex's wire: the events publishers send, the search and read
// requests and responses, status, health and error replies. The
// *.schema.json files in this directory are the published contract a
// publisher in any language validates against before it sends; this
// package embeds them so the binary can print them (`memindex schema`).
//
// It owns the files and their bundling into one self-contained document,
// nothing else: it imports only the standard library and does no I/O
// beyond its embedded files. The schemas describe the root package's wire
// types and must agree with them: schemas_test.go fails when a Go field
// has no property, when an example the Go types produce does not
// validate, or when the schema and the Go validation disagree on an event
// or request (apart from the differences it lists), and checks every wire
// example in README.md and the testdata directories.
package schemas
