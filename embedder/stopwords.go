package embedder

import "strings"

// stopWords are common English function words. The built-in embedder keeps
// them (a query can be all stop words, and "to be or not to be" should still
// match itself) but weights them, and the pairs and n-grams they are in, by
// wStop. Changing the list changes hash-ngram-v1's vectors.
const stopWords = `a about above after again against all am an and any are as at
be because been before being below between both but by can could did do does
doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself
yourselves s t d ll m re ve don`

// stopSet holds the unigram hashes of stopWords in an open-addressing table,
// so a lookup costs a probe or two and no string hashing.
var stopSet = func() []uint64 {
	words := strings.Fields(stopWords)
	size := 1
	for size < 4*len(words) {
		size <<= 1
	}
	table := make([]uint64, size)
	for _, w := range words {
		buf := make([]byte, 0, len(w)+10)
		buf = append(buf, '<')
		buf = append(buf, w...)
		buf = append(buf, '>', 0, 0, 0, 0, 0, 0, 0, 0)
		h := spanHash(buf, 1, 1+len(w), tagWord)
		i := h & uint64(size-1)
		for table[i] != 0 && table[i] != h {
			i = (i + 1) & uint64(size-1)
		}
		table[i] = h
	}
	return table
}()

// isStopWord reports whether h is the unigram hash of a stop word.
func isStopWord(h uint64) bool {
	mask := uint64(len(stopSet) - 1)
	for i := h & mask; stopSet[i] != 0; i = (i + 1) & mask {
		if stopSet[i] == h {
			return true
		}
	}
	return false
}
