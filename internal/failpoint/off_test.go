//go:build !failpoints

package failpoint

import (
	"os"
	"testing"
)

// TestOffBuildIgnoresTheEnvironment checks that without the failpoints tag
// the points are compiled out: Enabled is false and an armed point does
// nothing.
func TestOffBuildIgnoresTheEnvironment(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled is true in a build without the failpoints tag")
	}
	t.Setenv(EnvVar, "mid-tx:1")
	Inject(MidTx) // would SIGKILL this test binary with the tag
	if os.Getenv(EnvVar) != "mid-tx:1" {
		t.Fatal("environment changed")
	}
}
