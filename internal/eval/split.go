package eval

import "sort"

// Half names a half of a split corpus; All names the whole.
type Half string

// The halves of a split, and the whole.
const (
	HalfA Half = "A"
	HalfB Half = "B"
	All   Half = "all"
)

// Split assigns each distinct conversation (sessionKey), in sorted order,
// alternately to half A and half B: the first to A, the second to B, and so
// on. The result depends only on the set of keys, not their order.
func Split(sessionKeys []string) map[string]Half {
	keys := append([]string(nil), sessionKeys...)
	sort.Strings(keys)
	out := map[string]Half{}
	i := 0
	for _, k := range keys {
		if _, dup := out[k]; dup {
			continue
		}
		if i%2 == 0 {
			out[k] = HalfA
		} else {
			out[k] = HalfB
		}
		i++
	}
	return out
}

// Other returns the other half (All for All).
func (h Half) Other() Half {
	switch h {
	case HalfA:
		return HalfB
	case HalfB:
		return HalfA
	}
	return All
}
