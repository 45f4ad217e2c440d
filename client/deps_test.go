package client_test

import (
	"testing"

	"memindex/internal/puretest"
)

// TestBuildsWithoutCgo proves the package's rule: built with
// CGO_ENABLED=0, it and everything it imports are pure Go, and none of it
// is memindex's store, consumer, embedder or query (SQLite, sqlite-vec,
// gse's dictionary, the embedder providers stay out of a program that
// only searches).
func TestBuildsWithoutCgo(t *testing.T) { puretest.BuildsWithoutCgo(t, "..", "./client") }
