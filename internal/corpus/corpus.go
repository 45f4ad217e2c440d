// Package corpus generates deterministic synthetic conversations for tests
// and benchmarks: chat-like lines from a Zipf-distributed vocabulary, so a
// few words are very common and most are rare, as in real text. It owns no
// I/O and must not be used to judge retrieval quality (use LoCoMo for that).
package corpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Vocabulary size of generated text.
const vocabSize = 20000

var common = strings.Fields(`the a to and of i you it is in that we was for on my with
have be this so but just like what are not at do me about your all can had get so
going think know time really good yeah well one would there they if out up
people when go some our more day from how will very much now see did back new`)

// Gen produces deterministic text from a seed.
type Gen struct {
	r    *rand.Rand
	zipf *rand.Zipf
	// Speakers are the names messages alternate between.
	Speakers []string
}

// New returns a generator seeded with seed.
func New(seed uint64) *Gen {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Gen{r: r, zipf: rand.NewZipf(r, 1.1, 2, vocabSize-1), Speakers: []string{"Ana", "Ben"}}
}

// Word returns one word: a common English word or a synthetic one, with a
// Zipf distribution over ranks.
func (g *Gen) Word() string { return word(int(g.zipf.Uint64())) }

// RareWord returns a word from the rare end of the vocabulary.
func (g *Gen) RareWord() string { return word(vocabSize/2 + g.r.IntN(vocabSize/2)) }

// CommonWord returns one of the most common words.
func (g *Gen) CommonWord() string { return word(g.r.IntN(len(common))) }

func word(rank int) string {
	if rank < len(common) {
		return common[rank]
	}
	// Pronounceable synthetic words, stable per rank.
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	var b strings.Builder
	for x := rank; ; x /= 90 {
		b.WriteByte(cons[x%len(cons)])
		b.WriteByte(vows[(x/len(cons))%len(vows)])
		if x < 90 {
			break
		}
	}
	return b.String()
}

// Sentence returns a line of n words.
func (g *Gen) Sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.Word()
	}
	return strings.ToUpper(ws[0][:1]) + strings.Join(ws, " ")[1:] + "."
}

// Message is one generated turn.
type Message struct {
	SessionKey string
	SessionID  string
	Seq        int64
	ID         string
	Speaker    string
	Text       string
}

// Session returns n messages of one session, 12 to 35 words each.
func (g *Gen) Session(key, id string, n int) []Message {
	out := make([]Message, n)
	for i := range out {
		out[i] = Message{
			SessionKey: key, SessionID: id, Seq: int64(i + 1),
			ID:      fmt.Sprintf("%s/%s/%d", key, id, i+1),
			Speaker: g.Speakers[i%len(g.Speakers)],
			Text:    g.Sentence(12 + g.r.IntN(24)),
		}
	}
	return out
}

// Query returns a search question of 2 to 5 words; with rare set, it holds
// at least one rare word.
func (g *Gen) Query(rare bool) string {
	n := 2 + g.r.IntN(4)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.Word()
	}
	if rare {
		ws[0] = g.RareWord()
	}
	return strings.Join(ws, " ")
}
