package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"memindex"
)

// limitFlags are the serve flags that cap what a worker accepts: event and
// text size and session length (the consumer dead-letters what is over),
// query size and k (the service answers 413 or 400), and searches plus
// reads per second per namespace (the service answers 429 with
// Retry-After).
type limitFlags struct {
	limits memindex.Limits
	rate   float64
	// envErr holds the first MEMINDEX_* value that is not a number.
	envErr error
}

// register adds the limit flags to fs, each with its MEMINDEX_* variable
// and default d (rate: the searches a second per namespace).
func (l *limitFlags) register(fs *flag.FlagSet, d memindex.Limits, rate float64) {
	fs.IntVar(&l.limits.MaxEventBytes, "max-event-bytes", l.envInt("MEMINDEX_MAX_EVENT_BYTES", d.MaxEventBytes),
		fmt.Sprintf("largest event payload indexed, at most %d (the stream's max message size); a larger one is dead-lettered (MEMINDEX_MAX_EVENT_BYTES)", memindex.MaxEventBytes))
	fs.IntVar(&l.limits.MaxTextBytes, "max-text-bytes", l.envInt("MEMINDEX_MAX_TEXT_BYTES", d.MaxTextBytes),
		"largest message text, image caption or record text, at most --max-event-bytes; a larger one is dead-lettered, never truncated (MEMINDEX_MAX_TEXT_BYTES)")
	fs.Int64Var(&l.limits.MaxSessionMessages, "max-session-messages", int64(l.envInt("MEMINDEX_MAX_SESSION_MESSAGES", int(d.MaxSessionMessages))),
		"most messages a session may hold: a message whose seq is over it is dead-lettered (reason: the session would have N messages, over the limit of M); 0: no cap (MEMINDEX_MAX_SESSION_MESSAGES)")
	fs.IntVar(&l.limits.MaxQueryBytes, "max-query-bytes", l.envInt("MEMINDEX_MAX_QUERY_BYTES", d.MaxQueryBytes),
		fmt.Sprintf("longest search query, at most %d; a longer one is answered 413 (MEMINDEX_MAX_QUERY_BYTES)", memindex.MaxRequestSize))
	fs.IntVar(&l.limits.MaxK, "max-k", l.envInt("MEMINDEX_MAX_K", d.MaxK),
		fmt.Sprintf("most hits a search may ask for, at most %d; more is answered 400 (MEMINDEX_MAX_K)", memindex.MaxK))
	fs.Float64Var(&l.rate, "rate-per-namespace", l.envFloat("MEMINDEX_RATE_PER_NAMESPACE", rate),
		"searches and reads a second one namespace may run on this worker (token bucket, bursts of the rate rounded up); one more is answered 429 with Retry-After; 0: no limit (MEMINDEX_RATE_PER_NAMESPACE)")
}

func (l *limitFlags) envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil && l.envErr == nil {
		l.envErr = fmt.Errorf("%s=%q: want a whole number", name, v)
	}
	if err != nil {
		return def
	}
	return n
}

func (l *limitFlags) envFloat(name string, def float64) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && l.envErr == nil {
		l.envErr = fmt.Errorf("%s=%q: want a number", name, v)
	}
	if err != nil {
		return def
	}
	return f
}
