package client

import (
	"encoding/json"
	"testing"
)

// TestCacheKeyIgnoresKeyOrder: configurations decoded from JSON with
// their keys in another order share a key; another value does not.
func TestCacheKeyIgnoresKeyOrder(t *testing.T) {
	docs := []string{
		`{"backend":"qmd","qmd":{"command":"qmd","collections":["a","b"],"timeout":5},"fallback":{"backend":"local","local":{"path":"/d","keywordOnly":true}},"breaker":{"failures":2,"coolDown":9}}`,
		`{"breaker":{"coolDown":9,"failures":2},"fallback":{"local":{"keywordOnly":true,"path":"/d"},"backend":"local"},"qmd":{"timeout":5,"collections":["a","b"],"command":"qmd"},"backend":"qmd"}`,
	}
	var keys []string
	for _, d := range docs {
		var cfg Config
		mustTB(t, json.Unmarshal([]byte(d), &cfg))
		k, err := CacheKey(cfg)
		mustTB(t, err)
		keys = append(keys, k)
	}
	if keys[0] != keys[1] {
		t.Fatalf("CacheKey differs with key order: %s vs %s", keys[0], keys[1])
	}
	var other Config
	mustTB(t, json.Unmarshal([]byte(docs[0]), &other))
	other.Fallback.Local.Path = "/e"
	if k, _ := CacheKey(other); k == keys[0] {
		t.Fatal("CacheKey is the same for another fallback path")
	}
}
