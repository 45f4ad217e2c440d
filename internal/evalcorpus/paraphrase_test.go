package evalcorpus

import (
	"regexp"
	"strings"
	"testing"
)

// stopEN are English words that carry no content in a question.
var stopEN = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or of to in on at for with from by about into
		what when where which who whom why how did does do is was are were has have had be been
		his her he she its it their they them this that these those new most recently kind
		name named called s`) {
		stopEN[w] = true
	}
}

var wordRE = regexp.MustCompile(`[a-z0-9]+`)

// contentWords returns the words of s that are neither stop words nor in
// skip (the people's names), with a trailing plural s dropped.
func contentWords(s string, skip map[string]bool) []string {
	var out []string
	for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
		if stopEN[w] || skip[w] {
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	return out
}

// bigrams returns the character bigrams of the Han runs of s, leaving out
// those inside names in skip.
func bigrams(s string, skip []string) []string {
	for _, n := range skip {
		s = strings.ReplaceAll(s, n, "|")
	}
	var out []string
	for _, run := range regexp.MustCompile(`\p{Han}+`).FindAllString(s, -1) {
		r := []rune(run)
		for i := 0; i+1 < len(r); i++ {
			out = append(out, string(r[i:i+2]))
		}
	}
	return out
}

// evidence returns each question's gold texts, joined, and the names used
// in its conversation.
func evidence(c Corpus) (texts map[string]string, names map[string][]string) {
	msgs := map[string]string{}
	names = map[string][]string{}
	for _, e := range c.Events {
		msgs[e.EventID] = e.Text
		if !strings.Contains(strings.Join(names[e.SessionKey], "\x00"), e.Speaker) {
			names[e.SessionKey] = append(names[e.SessionKey], e.Speaker)
		}
	}
	texts = map[string]string{}
	for _, q := range c.Queries {
		var parts []string
		for _, id := range q.GoldMessageIDs {
			parts = append(parts, msgs[q.SessionKey+"/"+id])
		}
		texts[q.QueryID] = strings.Join(parts, "\n")
	}
	return texts, names
}

// normal lowercases s and keeps its letters, digits and Han characters.
func normal(s string) string {
	return strings.Join(regexp.MustCompile(`[\p{L}\p{N}]+`).FindAllString(strings.ToLower(s), -1), " ")
}

// TestQuestionsParaphraseEvidence checks that no question copies its
// evidence and that most leave out some of its content words: the share of
// questions whose content words all occur in the evidence (a keyword search
// finds them easily) stays below a bound measured on the default corpora.
func TestQuestionsParaphraseEvidence(t *testing.T) {
	for _, tc := range []struct {
		lang string
		// maxCovered is the largest share of questions whose content words
		// (en) or Han bigrams (zh) all occur in the evidence; measured
		// 0.049 (en) and 0.000 (zh) at seed 1.
		maxCovered float64
		// minDisjoint is the smallest share of questions with no content
		// word (bigram) in common with the evidence; measured 0.479 (en)
		// and 0.510 (zh).
		minDisjoint float64
	}{
		{"en", 0.10, 0.35},
		{"zh", 0.05, 0.35},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			c := generate(t, Config{Lang: tc.lang})
			texts, names := evidence(c)
			covered, disjoint := 0, 0
			for _, q := range c.Queries {
				ev := texts[q.QueryID]
				for _, line := range strings.Split(ev, "\n") {
					nq, nl := normal(q.Question), normal(line)
					if strings.Contains(nq, nl) || strings.Contains(nl, nq) {
						t.Fatalf("%s: question %q copies its evidence %q", q.QueryID, q.Question, line)
					}
				}
				var qw, ew []string
				if tc.lang == "zh" {
					qw, ew = bigrams(q.Question, names[q.SessionKey]), bigrams(ev, names[q.SessionKey])
				} else {
					skip := map[string]bool{}
					for _, n := range names[q.SessionKey] {
						skip[strings.ToLower(n)] = true
					}
					qw, ew = contentWords(q.Question, skip), contentWords(ev, skip)
				}
				in := map[string]bool{}
				for _, w := range ew {
					in[w] = true
				}
				shared := 0
				for _, w := range qw {
					if in[w] {
						shared++
					}
				}
				if shared == len(qw) {
					covered++
				}
				if shared == 0 {
					disjoint++
				}
			}
			n := float64(len(c.Queries))
			t.Logf("%s: %d questions, all content shared %.3f, none shared %.3f", tc.lang, len(c.Queries), float64(covered)/n, float64(disjoint)/n)
			if got := float64(covered) / n; got > tc.maxCovered {
				t.Errorf("%.3f of questions share all their content words with the evidence, want at most %.2f", got, tc.maxCovered)
			}
			if got := float64(disjoint) / n; got < tc.minDisjoint {
				t.Errorf("%.3f of questions share no content word with the evidence, want at least %.2f", got, tc.minDisjoint)
			}
		})
	}
}
