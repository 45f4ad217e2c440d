// Package evalcorpus generates deterministic synthetic evaluation corpora with
// known answers: multi-session chat logs between a few named people, with
// facts (events, preferences, plans) embedded in small talk, and LoCoMo-style
// questions whose gold evidence is the messages that state each fact. The
// output uses the field names of the converted LoCoMo files
// (locomo10.events.jsonl, locomo10.queries.jsonl), so one evaluator reads
// LoCoMo and these corpora alike. There is an English corpus ("synthetic-en")
// and a Chinese one ("synthetic-zh"), whose text has no spaces and so
// exercises the CJK segmentation path.
//
// The corpora are a second and third opinion next to LoCoMo, so that ranking
// defaults are not tuned to one dataset. Questions paraphrase their evidence
// (other words, other word forms, names instead of pronouns) and the same
// topic words recur in unrelated messages, so that a keyword search alone
// does not solve them.
//
// It must not do I/O other than Corpus.WriteDir, must not be used by
// production code paths (it is for evaluation tools and tests only), and must
// never contain or read LoCoMo data: it only imitates its format. The same
// Config always gives byte-identical output.
package evalcorpus
