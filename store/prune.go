package store

import (
	"context"
	"database/sql"
	"sort"
	"sync"
	"time"
)

// rankBudget is about how many matching rows one keyword search lets FTS5
// rank. FTS5 computes bm25 for every row that matches before it can sort
// (about 1.5 µs a row for 200-word chunks here), so a query term found in
// half of 100,000 chunks costs ~75 ms however small k is, while a rare term
// costs well under a millisecond. It was 2,000 until message units: with one
// chunk a message, LoCoMo's 5,882 chunks made most questions drop a term
// (often the name of the person asked about); at 4,000 strict rec@5+rec@10
// rose on both halves (rec@5/rec@10 A 0.704/0.787 -> 0.703/0.792, B
// 0.682/0.758 -> 0.691/0.769); no pruning at all gave no more. A
// common-word query costs at most twice as much; issue 13's keyword index
// is to make the budget unnecessary.
const rankBudget = 4000

// termDF caches the document frequency of query terms in one shard, so that
// a keyword search can drop its most common terms without counting them each
// time. An entry is trusted for dfMaxAge and while the shard's size stays
// within a fifth of what it was when the term was counted.
type termDF struct {
	budget int64 // rankBudget; tests lower it
	mu     sync.Mutex
	m      map[string]dfEntry
}

type dfEntry struct {
	df    int64
	total int64
	at    time.Time
}

const (
	dfMaxAge     = 5 * time.Minute
	dfMaxEntries = 100_000
)

// cap is the count at which document frequencies stop being counted.
func (d *termDF) cap() int64 { return 8 * d.budget }

func newTermDF() *termDF { return &termDF{budget: rankBudget, m: make(map[string]dfEntry)} }

// prune drops the most common terms of a query when ranking every row they
// match would exceed rankBudget: terms are taken rarest first while the rows
// they match together stay within the budget, and the rarest is always kept.
// Dropped terms match so many chunks that their BM25 weight is small; the
// order of the kept terms is the query's. Shards of at most rankBudget chunks
// are never pruned.
//
// It also returns how many rows the kept terms match together (0 when it did
// not count them); above the budget, the caller ranks only the newest rows.
func (d *termDF) prune(ctx context.Context, db *sql.DB, terms []string, total int64) ([]string, int64, error) {
	if total <= d.budget {
		return terms, 0, nil
	}
	dfs := make([]int64, len(terms))
	var sum int64
	for i, t := range terms {
		n, err := d.get(ctx, db, t, total)
		if err != nil {
			return nil, 0, err
		}
		dfs[i] = n
		sum += n
	}
	if sum <= d.budget || len(terms) == 1 {
		return terms, sum, nil
	}
	idx := make([]int, len(terms))
	for i := range idx {
		idx[i] = i
	}
	// Rarest first; among terms counted only up to the cap, the longer word
	// is taken as the rarer.
	sort.SliceStable(idx, func(a, b int) bool {
		if dfs[idx[a]] != dfs[idx[b]] {
			return dfs[idx[a]] < dfs[idx[b]]
		}
		return len(terms[idx[a]]) > len(terms[idx[b]])
	})
	keep := make([]bool, len(terms))
	var cum int64
	for n, i := range idx {
		if n == 0 || cum+dfs[i] <= d.budget {
			keep[i] = true
			cum += dfs[i]
		}
	}
	out := make([]string, 0, len(terms))
	for i, t := range terms {
		if keep[i] {
			out = append(out, t)
		}
	}
	return out, cum, nil
}

// get returns the number of chunks of the shard that match term.
func (d *termDF) get(ctx context.Context, db *sql.DB, term string, total int64) (int64, error) {
	now := time.Now()
	d.mu.Lock()
	e, ok := d.m[term]
	d.mu.Unlock()
	if ok && now.Sub(e.at) < dfMaxAge && abs64(total-e.total)*5 <= e.total {
		return e.df, nil
	}
	// Counting stops at cap: past it the exact figure changes no decision
	// (the term is dropped, or the search is windowed anyway), and counting
	// a term in every chunk of a large shard costs milliseconds.
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)`,
		ftsColumns+` : `+quoteTerm(term), d.cap()).Scan(&n); err != nil {
		return 0, err
	}
	d.mu.Lock()
	if len(d.m) >= dfMaxEntries {
		clear(d.m)
	}
	d.m[term] = dfEntry{df: n, total: total, at: now}
	d.mu.Unlock()
	return n, nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
