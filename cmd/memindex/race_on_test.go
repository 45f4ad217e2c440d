//go:build race

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// raceBuild: this test binary has the race detector, and so do the
// memindex binaries it builds for child processes (builtBinary).
const raceBuild = true

// TestChildBinariesAreRaceBuilt: under -race, the memindex binaries the
// crash, fault and cluster tests run as children carry the race detector
// (go version -m shows the build setting), so their logs' "DATA RACE"
// checks can fire.
func TestChildBinariesAreRaceBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a child binary")
	}
	out, err := exec.Command("go", "version", "-m", binary(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-race=true") {
		t.Fatalf("the child binary was built without -race:\n%s", out)
	}
}
