package memindex

import (
	"fmt"
	"strings"
	"time"
)

// HealthSubject is the health endpoint; every worker answers it.
const HealthSubject = "memindex.health"

// Health states.
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded"
	HealthDown     = "down"
)

// HealthResponse is one worker's probe answer: whether it serves, and
// whether embeddings and vectors are available, in words.
type HealthResponse struct {
	Type       string `json:"type"` // "health"
	Worker     string `json:"worker"`
	Status     string `json:"status"` // ok, degraded or down
	Ready      bool   `json:"ready"`
	Embeddings string `json:"embeddings"`
	Vectors    string `json:"vectors"`
	// Problems lists, in words, what makes the status less than ok.
	Problems []string `json:"problems,omitempty"`
}

// VectorLag is how long the oldest chunk may wait for its vector before
// health calls the vectors degraded.
const VectorLag = time.Minute

// HealthOf condenses a status into a health answer.
func HealthOf(st StatusResponse) HealthResponse {
	h := HealthResponse{Type: "health", Worker: st.Worker, Status: HealthOK, Ready: st.Ready, Embeddings: HealthOK, Vectors: HealthOK}
	if !st.Ready {
		h.Status = HealthDown
		h.Problems = append(h.Problems, "the worker is not consuming")
	}
	if st.Embedder.Breaker != "" && st.Embedder.Breaker != "closed" {
		h.Embeddings = fmt.Sprintf("provider circuit breaker %s until %s", st.Embedder.Breaker, st.Embedder.BreakerOpenUntil)
		h.Problems = append(h.Problems, "embeddings: "+h.Embeddings)
	}
	total := st.Total()
	waiting, oldest := total.VectorsWaiting, total.OldestWaitSeconds
	for _, p := range st.Partitions {
		if p.Error != "" {
			h.Problems = append(h.Problems, fmt.Sprintf("partition %d: %s", p.Partition, p.Error))
		}
		if why, ok := strings.CutPrefix(p.KeywordIndex, "fts5"); ok {
			// Degraded, never down: FTS5 answers, without the chunks'
			// context (store migration 0011), so worse.
			why = strings.TrimPrefix(why, ": ")
			if why == "" { // a worker of before 0011 said "fts5" alone
				why = "no keyword index"
			}
			h.Problems = append(h.Problems, fmt.Sprintf("partition %d: keyword search ranked by FTS5, without the chunks' context (%s)", p.Partition, why))
		}
	}
	var vecProblems []string
	if fb := st.VectorFallback(); fb != "" { // degraded, never down: vector search still answers
		vecProblems = append(vecProblems, fb)
	}
	if waiting > 0 && oldest > VectorLag.Seconds() {
		vecProblems = append(vecProblems, fmt.Sprintf("%d chunks wait for vectors, the oldest for %.0fs (keyword search covers them)", waiting, oldest))
	}
	if len(vecProblems) > 0 {
		h.Vectors = strings.Join(vecProblems, "; ")
		for _, p := range vecProblems {
			h.Problems = append(h.Problems, "vectors: "+p)
		}
	}
	if h.Status == HealthOK && len(h.Problems) > 0 {
		h.Status = HealthDegraded
	}
	return h
}
