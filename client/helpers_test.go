package client

import (
	"testing"
	"time"

	"memindex/internal/clocktest"
)

func mustTB(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// newFakeClock returns the tests' injected clock, which moves only when told.
func newFakeClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}
