// Package internal holds helpers shared by the packages of memindex: test
// helpers (natstest, failpoint) and the measuring tools behind `memindex
// bench` and `memindex eval` (bench, evalrun, the harness through which
// both start nodes, corpus, eval, evalcorpus). None of it is used
// by the worker's serving or ingest path, with one exception that does
// nothing there: failpoint, whose calls in the ingest path compile to
// nothing without the failpoints build tag.
package internal
