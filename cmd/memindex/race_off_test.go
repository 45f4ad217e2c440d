//go:build !race

package main

// raceBuild: this test binary has no race detector; the child binaries it
// builds have none either.
const raceBuild = false
