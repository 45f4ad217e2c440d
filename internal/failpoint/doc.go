// Package failpoint crashes or stalls a test build of memindex at named
// points of the ingest path, so tests can prove what a crash in each window
// leaves behind.
//
// It is compiled in only with the build tag failpoints. Without it (every
// production build: make build) Enabled is the constant false and Inject is
// empty, so a call site written as
//
//	if failpoint.Enabled { failpoint.Inject(failpoint.AfterEmbed) }
//
// is removed by the compiler and costs nothing.
//
// With the tag, the environment variable MEMINDEX_FAILPOINT (read once, at
// the first Inject) arms points: a comma-separated list of
// point:n[:action], where n is the hit that fires (1 = the first) and the
// action is "kill" (the default: the process sends itself SIGKILL, as an
// OOM killer or a power cut would end it) or "sleep=DURATION" (every hit
// from the n-th on stalls for DURATION, to hold the process inside the
// window). Each firing is written to standard error as a line starting
// "failpoint: " so a test can wait for it. A malformed value panics at the
// first Inject, naming the variable.
//
// It owns nothing else and must not be used for anything but tests: no
// production behaviour may depend on it.
package failpoint

// The points in the ingest path (see consumer/worker.go and store/apply.go).
const (
	// AfterEmbed is after a batch's new chunks were embedded and before
	// its transaction begins.
	AfterEmbed = "after-embed"
	// MidTx is inside store.Apply's transaction, after the batch's messages
	// and chunks were written and before its applied sequence.
	MidTx = "mid-tx"
	// AfterCommit is after a batch committed and before it is acknowledged.
	AfterCommit = "after-commit"
)

// EnvVar arms failpoints in a process built with the failpoints tag.
const EnvVar = "MEMINDEX_FAILPOINT"
