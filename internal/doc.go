// Package internal holds test helpers shared by the packages of memindex
// (see natstest). Nothing here is used by production code, with one
// exception that does nothing there: failpoint, whose calls in the ingest
// path compile to nothing without the failpoints build tag.
package internal
