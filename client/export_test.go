package client

// Exported for the tests of package client_test, which run a real worker
// and real shards (package query and store import this package).

import "memindex/internal/clocktest"

// StandInQMD installs the stand-in qmd executable (qmd_test.go).
var StandInQMD = standInQMD

// Shared returns the manager a Cache handle shares with the other holders.
func Shared(m Manager) Manager { return m.(*cached).Manager }

// FallbackOpened reports whether a fallback wrapper has opened its
// fallback.
func FallbackOpened(m Manager) bool {
	f := m.(*fallback)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fb != nil
}

// NewFakeClock is the tests' injected clock (helpers_test.go).
func NewFakeClock() *clocktest.Clock { return newFakeClock() }

// GroupWindow is the most messages a Grouper's open runs hold.
const GroupWindow = groupWindow
