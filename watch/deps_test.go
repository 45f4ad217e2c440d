package watch_test

import (
	"testing"

	"memindex/internal/puretest"
)

// TestBuildsWithoutCgo proves the package's rule: like package client, it
// and everything it imports are pure Go, build with CGO_ENABLED=0, and none
// of it is memindex's store, consumer, embedder, query or chunker.
func TestBuildsWithoutCgo(t *testing.T) { puretest.BuildsWithoutCgo(t, "..", "./watch") }
