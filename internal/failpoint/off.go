//go:build !failpoints

package failpoint

// Enabled is false: this build has no failpoints (build tag failpoints).
const Enabled = false

// Inject does nothing in a build without the failpoints tag.
func Inject(string) {}
