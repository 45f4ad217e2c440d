// Command memindex is the one binary of memindex: serve (the worker),
// publish, search, status, dlq and bench. It owns configuration (flags, then
// environment, then defaults), wiring of the concrete types, logging and
// shutdown order; logic worth a unit test lives in the packages it wires.
package main
