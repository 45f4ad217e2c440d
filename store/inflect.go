package store

import "strings"

// irregularForms maps each form of a common English irregular verb or noun
// to all its forms: the porter stemmer joins "moved" and "moving" but never
// "went" and "go", or "children" and "child", so a query term is also
// searched as its other forms ("When did Ana go to Lisbon?" matches "we went
// to Lisbon"). Linguistic, not tuned to any corpus: the common irregular
// verbs and plurals of English, their stop words left out.
var irregularForms = func() map[string][]string {
	m := map[string][]string{}
	for _, group := range strings.Split(`begin began begun|break broke broken|bring brought|build built|buy bought|
catch caught|choose chose chosen|come came|draw drew drawn|drink drank drunk|drive drove driven|eat ate eaten|
fall fell fallen|feel felt|fight fought|find found|fly flew flown|forget forgot forgotten|get got gotten|
give gave given|go went gone|grow grew grown|hear heard|hold held|keep kept|know knew known|leave left|
lend lent|lose lost|make made|meet met|pay paid|ride rode ridden|ring rang rung|rise rose risen|run ran|
say said|see saw seen|sell sold|send sent|shoot shot|sing sang sung|sit sat|sleep slept|speak spoke spoken|
spend spent|stand stood|steal stole stolen|swim swam swum|take took taken|teach taught|tell told|
think thought|throw threw thrown|understand understood|wake woke woken|wear wore worn|win won|write wrote written|
child children|person people|man men|woman women|mouse mice|foot feet|tooth teeth`, "|") {
		forms := strings.Fields(group)
		for _, f := range forms {
			m[f] = forms
		}
	}
	return m
}()

// withIrregularForms returns terms with the other forms of each irregular
// word added after it, each term once.
func withIrregularForms(terms []string) []string {
	var out []string
	seen := make(map[string]bool, len(terms))
	for _, t := range terms {
		seen[t] = true
	}
	for _, t := range terms {
		out = append(out, t)
		for _, f := range irregularForms[t] {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}
