package embedder

import (
	"encoding/binary"
	"math"
)

// spanHash hashes buf[start:end] under tag. Spans of up to 7 bytes are
// packed into the key with their length and tag (an exact, collision-free
// key) and mixed; longer spans are folded 8 bytes at a time, a multiply and
// an xor-shift per chunk, and mixed. buf must have 8 readable bytes past end.
func spanHash(buf []byte, start, end int, tag uint64) uint64 {
	n := end - start
	if n <= 7 {
		x := binary.LittleEndian.Uint64(buf[start:])
		x &= 1<<(8*uint(n)) - 1
		if tag == tagGram { // as the ASCII path of addWord hashes it
			return gramHash(x | uint64(n)<<56 | tag<<59)
		}
		return mix(x | uint64(n)<<56 | tag<<59)
	}
	const k = 0x9e3779b97f4a7c15
	h := uint64(n) | tag<<59
	p := start
	for ; p+8 <= end; p += 8 {
		h = (h ^ binary.LittleEndian.Uint64(buf[p:])) * k
		h ^= h >> 29
	}
	if r := end - p; r > 0 {
		h = (h ^ binary.LittleEndian.Uint64(buf[p:])&(1<<(8*uint(r))-1)) * k
		h ^= h >> 29
	}
	return mix(h)
}

// gramHash is the hash of a packed n-gram key: one multiply (Fibonacci
// hashing), its high half folded into the low so that the sign bit depends
// on every byte. Cheaper than mix, and enough for bucket and sign, which come
// from the high half and bit 31.
func gramHash(k uint64) uint64 {
	k = (k ^ hashSeed) * 0x9e3779b97f4a7c15
	return k ^ k>>32
}

// hashSeed is fixed forever for hash-ngram-v1: vectors must be identical
// across processes and runs.
const hashSeed = 0x6d656d696e646578 // "memindex"

// mix is the murmur3 64-bit finaliser over k^hashSeed: a bijection, so packed
// keys stay collision-free until they are reduced to a bucket.
func mix(k uint64) uint64 {
	k ^= hashSeed
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// emptyHash places the vector of a text without words.
var emptyHash = mix(tagEmpty << 59)

// bucket maps a hash to 0..dims-1 by its high 32 bits (multiply-shift).
func bucket(h uint64, dims int) int {
	return int((h >> 32) * uint64(dims) >> 32)
}

// add adds w to v at h's bucket, negated when bit 31 of h is set. The sign is
// applied to the float's bits, so no multiply-add can be fused differently
// on another platform.
func add(v []float32, h uint64, w float32) {
	v[bucket(h, len(v))] += math.Float32frombits(math.Float32bits(w) ^ uint32(h)&0x80000000)
}
