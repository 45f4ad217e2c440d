package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Benchmarks share one fixture per size, built once per process (outside
// any timed section) in fixtureDir, which TestMain removes.
const benchDims = 384

var (
	fixtureDir  string
	fixtureMu   sync.Mutex
	fixtures    = map[int]*Shard{}
	benchVocab  = vocabulary(20000)
	zipfWeights = zipfCDF(len(benchVocab), 1.07)
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixtureMu.Lock()
	for _, s := range fixtures {
		s.Close(context.Background())
	}
	fixtureMu.Unlock()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// vocabulary returns n words: common English words first (so the head of the
// Zipf distribution looks like real text, stop words included), then
// generated pronounceable words.
func vocabulary(n int) []string {
	words := strings.Fields(`the of and to a in is it you that he was for on are with as i his they be at one have this from
or had by hot word but what some we can out other were all there when up use your how said an each she which do their time if
will way about many then them write would like so these her long make thing see him two has look more day could go come did
number sound no most people my over know water than call first who may down side been now find any new work part take get place
made live where after back little only round man year came show every good me give our under name very through just form
sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want
air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men
change went light kind off need house picture try us again animal point mother world near build self earth father head stand own
page should country found answer school grow study still learn plant cover food sun four between state keep eye never last let
thought city tree cross farm hard start might story saw far sea draw left late run while press close night real life few north`)
	syll := []string{"ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ven", "dor", "ral", "ix", "qu", "bel", "zen", "tor", "ma", "li"}
	seen := map[string]bool{}
	for _, w := range words {
		seen[w] = true
	}
	for i := 0; len(words) < n; i++ {
		var b strings.Builder
		for x := i + 1; x > 0; x /= len(syll) {
			b.WriteString(syll[x%len(syll)])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words[:n]
}

func zipfCDF(n int, s float64) []float64 {
	cdf := make([]float64, n)
	var sum float64
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf
}

func zipfText(r *rand.Rand, words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		k, _ := slices.BinarySearch(zipfWeights, r.Float64())
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchVocab[min(k, len(benchVocab)-1)])
	}
	return b.String()
}

// benchBatch builds one session of n messages and n chunks (one per
// message, ~40 Zipf words each), with vectors when dims > 0.
func benchBatch(r *rand.Rand, ns string, session, n, dims int) Batch {
	ref := SessionRef{Namespace: ns, SessionKey: fmt.Sprintf("key-%d", session%10), SessionID: fmt.Sprintf("s-%d", session)}
	b := Batch{Seq: uint64(session + 1), Rechunk: []SessionChunks{{Session: ref}}}
	for i := 0; i < n; i++ {
		ts := t0.Add(time.Duration(session*n+i) * time.Minute)
		text := zipfText(r, 40)
		b.Messages = append(b.Messages, Message{Namespace: ns, SessionKey: ref.SessionKey, SessionID: ref.SessionID,
			Seq: int64(i), ID: fmt.Sprintf("m-%d-%d", session, i), Role: "user", Speaker: "Ana", Text: text, Time: ts})
		c := Chunk{ID: fmt.Sprintf("c-%s-%d-%d", ns, session, i), Source: "sessions", SeqStart: int64(i), SeqEnd: int64(i),
			Text: text, TimeStart: ts, TimeEnd: ts}
		if dims > 0 {
			c.Vector = randVec(r, dims)
		}
		b.Rechunk[0].Chunks = append(b.Rechunk[0].Chunks, c)
	}
	return b
}

// benchShard returns the shared fixture with `chunks` chunks (with vectors)
// in namespace "bench" plus 1,000 in namespace "other", building it on first
// use. Its construction is not timed.
func benchShard(b *testing.B, chunks int) *Shard {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if s := fixtures[chunks]; s != nil {
		return s
	}
	b.StopTimer()
	defer b.StartTimer()
	if fixtureDir == "" {
		d, err := os.MkdirTemp("", "memindex-store-bench-")
		if err != nil {
			b.Fatal(err)
		}
		fixtureDir = d
	}
	ctx := context.Background()
	path := filepath.Join(fixtureDir, fmt.Sprintf("shard-%d.db", chunks))
	s, err := Open(ctx, path, Config{Dims: benchDims})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(chunks), 1))
	const per = 500
	for i := 0; i*per < chunks; i++ {
		if _, err := s.Apply(ctx, benchBatch(r, "bench", i, min(per, chunks-i*per), benchDims)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Apply(ctx, benchBatch(r, "other", 100000+i, per, benchDims)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	fixtures[chunks] = s
	return s
}

// timed runs op b.N times and reports the p50 and p99 latency.
func timed(b *testing.B, op func(i int)) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		op(i)
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkApply(b *testing.B) {
	for _, dims := range []int{0, benchDims} {
		b.Run(fmt.Sprintf("vectors=%d", dims), func(b *testing.B) {
			const per = 200
			ctx := context.Background()
			s := openTest(b, benchDims)
			r := rand.New(rand.NewPCG(1, 2))
			batches := make([]Batch, b.N)
			for i := range batches {
				batches[i] = benchBatch(r, "bench", i, per, dims)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Apply(ctx, batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N*per)/sec, "chunks/s")
			b.ReportMetric(float64(b.N*per)/sec, "msgs/s")
		})
	}
}

func BenchmarkVectorSearch(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			s := benchShard(b, n)
			ctx := context.Background()
			r := rand.New(rand.NewPCG(3, 4))
			qs := make([][]float32, 64)
			for i := range qs {
				qs[i] = randVec(r, benchDims)
			}
			timed(b, func(i int) {
				if _, err := s.VectorSearch(ctx, "bench", qs[i%len(qs)], Filter{}, 10); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkKeywordSearch(b *testing.B) {
	queries := map[string][]string{
		// Ranks ~60-200 of the vocabulary (frequent words, no stop words).
		"common": {"what did people say about the water", "how long is the day", "make a picture of the house",
			"number of people in the city", "find the sound of water"},
		// Ranks beyond 5,000.
		"rare": {benchVocab[6000] + " " + benchVocab[9000], benchVocab[12000], benchVocab[7777] + " " + benchVocab[15555],
			"where is " + benchVocab[5001], benchVocab[19000] + " " + benchVocab[8000]},
	}
	for _, n := range []int{10000, 100000} {
		for _, kind := range []string{"common", "common-unbudgeted", "rare"} {
			b.Run(fmt.Sprintf("chunks=%d/query=%s", n, kind), func(b *testing.B) {
				s := benchShard(b, n)
				ctx := context.Background()
				if kind == "common-unbudgeted" { // every term ranked in full, as before the row budget
					kind = "common"
					s.df.budget = math.MaxInt64
					b.Cleanup(func() { s.df.budget = rankBudget })
				}
				qs := queries[kind]
				timed(b, func(i int) {
					got, err := s.KeywordSearch(ctx, "bench", qs[i%len(qs)], Filter{}, 10)
					if err != nil && !errors.Is(err, ErrPartial) { // partial: ranked the newest matches
						b.Fatal(err)
					}
					if len(got) == 0 && kind == "common" {
						b.Fatalf("no hit for %q", qs[i%len(qs)])
					}
				})
			})
		}
	}
}
