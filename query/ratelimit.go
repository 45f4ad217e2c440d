package query

import (
	"container/list"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxNamespaces is how many namespaces' rate limiters a Service keeps
// at most; past it the least recently used is dropped.
const DefaultMaxNamespaces = 10_000

// namespaceLimiter is one token bucket per namespace, searches and reads
// together, kept in a map bounded by max entries: a flood of distinct
// namespaces evicts the least recently used bucket instead of growing
// memory. A dropped namespace starts again with a full bucket; one unused
// for burst/rate seconds had a full bucket anyway, so with max well above
// the namespaces active at once eviction changes nothing.
type namespaceLimiter struct {
	limit rate.Limit
	burst int
	max   int

	mu   sync.Mutex
	byNS map[string]*list.Element
	lru  list.List // of *nsBucket, most recently used first
}

type nsBucket struct {
	ns  string
	lim *rate.Limiter
}

// newNamespaceLimiter returns a limiter of perSecond requests a second per
// namespace with bursts of burst (at least 1), keeping at most max buckets
// (at least 1); nil when perSecond is not positive (no limit).
func newNamespaceLimiter(perSecond float64, burst, max int) *namespaceLimiter {
	if perSecond <= 0 {
		return nil
	}
	return &namespaceLimiter{limit: rate.Limit(perSecond), burst: max1(burst), max: max1(max),
		byNS: make(map[string]*list.Element)}
}

func max1(n int) int { return max(n, 1) }

// allow takes a token from ns's bucket at now. When the bucket is empty it
// takes nothing and returns false with the time until a token is there.
// A nil limiter allows everything.
func (l *namespaceLimiter) allow(ns string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var b *nsBucket
	if el, ok := l.byNS[ns]; ok {
		l.lru.MoveToFront(el)
		b = el.Value.(*nsBucket)
	} else {
		if l.lru.Len() >= l.max {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.byNS, old.Value.(*nsBucket).ns)
		}
		b = &nsBucket{ns: ns, lim: rate.NewLimiter(l.limit, l.burst)}
		l.byNS[ns] = l.lru.PushFront(b)
	}
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second // cannot happen with burst >= 1
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// len returns how many namespaces have a bucket.
func (l *namespaceLimiter) len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byNS)
}

// retrySeconds rounds d up to whole seconds for a Retry-After header, at
// least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
