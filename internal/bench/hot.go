package bench

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sourcegraph/conc/pool"

	"memindex"
	"memindex/chunker"
	"memindex/client"
	"memindex/embedder"
	"memindex/internal/corpus"
	"memindex/internal/harness"
)

// The hot suite (issue 13 item 3): one namespace, so one partition and one
// SQLite writer, with many interleaved sessions, ingested over NATS end to
// end; beside it in the same run the same messages spread over many
// namespaces, the one namespace again from a backlog (published first, then
// a fresh worker catches up: what the worker alone sustains when its
// publishers do not share its cores), and the floors in process over the
// same messages: plain FTS5
// inserting one row a message (one transaction per batch of the worker's
// size, and one transaction for all), and the built-in embedder alone on the
// texts the worker embeds.

// HotFigure is one system's time over the hot suite's messages.
type HotFigure struct {
	System   string `json:"system"`
	Messages int    `json:"messages"`
	Sessions int    `json:"sessions"`
	// Namespaces is how many namespaces the sessions were spread over: 1
	// but for the 100-namespace cases, which spread them over
	// min(sessions, 100) (0: not recorded, a report from before it).
	Namespaces int `json:"namespaces,omitempty"`
	// MessagesPerEvent is how many messages an event appended: 10 in the
	// batched cases (messages events), else one (0: a report from before).
	MessagesPerEvent int     `json:"messagesPerEvent,omitempty"`
	Seconds          float64 `json:"seconds"`
	PerSecond        float64 `json:"messagesPerSecond"`
	// CPUMicrosPerMessage is the process's CPU time (user and system, all
	// threads: the worker, the in-process NATS server and the publisher)
	// over the run, a message; CoresBusy is that CPU time over the run's
	// wall time. What a message costs in CPU says what more cores could
	// give; cores busy below the box's says a stage waits rather than
	// computes.
	CPUMicrosPerMessage float64 `json:"cpuMicrosPerMessage,omitempty"`
	CoresBusy           float64 `json:"coresBusy,omitempty"`
	// FaultsPerMessage is the process's minor page faults over the run, a
	// message: mostly a fresh worker's heap touched for the first time.
	// A fault cost about 10 µs on this project's paravirtualised box
	// (BENCHMARKS.md), so this says how much of CPUMicrosPerMessage a
	// box's page faults take.
	FaultsPerMessage float64 `json:"pageFaultsPerMessage,omitempty"`
	// Commits is how many batches the worker committed over the run (the
	// partitions' commits in status, asked over NATS before and after);
	// Messages over Commits is the mean batch, which sets what a commit's
	// fixed cost weighs a message.
	Commits int `json:"commits,omitempty"`
	// PublishSeconds and PublishCPUMicrosPerMessage (the backlog case
	// only) are the publishing of the events before the worker started:
	// its time, and the process's CPU a message (publisher and NATS
	// server). Seconds is then from the worker's start to its last commit.
	PublishSeconds             float64 `json:"publishSeconds,omitempty"`
	PublishCPUMicrosPerMessage float64 `json:"publishCpuMicrosPerMessage,omitempty"`
}

// Systems of the hot suite, as its table names them.
const (
	HotMemindex     = "memindex over NATS, one namespace"
	HotMemindexMany = "memindex over NATS, 100 namespaces"
	HotBacklog      = "memindex over NATS, one namespace, from a backlog"
	// The cases on a worker and stream of their own (a fresh worker, as
	// the one-namespace case's is, the first of its node): the spread
	// case again, and both loads in messages events of hotEventMessages
	// messages (consecutive messages of one session), as a publisher with
	// many messages at hand sends them.
	HotMemindexManyFresh   = "memindex over NATS, 100 namespaces, fresh worker"
	HotMemindexBatched     = "memindex over NATS, one namespace, 10 messages an event, fresh worker"
	HotMemindexManyBatched = "memindex over NATS, 100 namespaces, 10 messages an event, fresh worker"
	HotFTSBatch            = "plain FTS5, one tx per batch"
	HotFTSOne              = "plain FTS5, one tx"
	HotEmbed1              = "built-in embedder, 1 goroutine"
	HotEmbedN              = "built-in embedder, all CPUs"
)

// hotNamespace is the namespace the hot suite ingests n messages into (one
// a size, so the sizes of one run do not share sessions).
func hotNamespace(n int) string { return fmt.Sprintf("bench-hot-%d", n) }

// hotManyNamespaces is how many namespaces the hot suite's spread case
// spreads the hot namespace's sessions over.
const hotManyNamespaces = 100

// hotEventMessages is how many messages an event of the hot suite's
// batched cases appends.
const hotEventMessages = 10

// hotEvents returns n messages over sessions sessions, interleaved:
// message i is the (i/sessions+1)-th of session i%sessions, as a tenant's
// many live conversations arrive; one event a message, or with per > 1 in
// messages events of per consecutive messages of a session (message i is
// then of session (i/per)%sessions). With namespaces 1 they are all of one
// namespace; with more, session s is of namespace s%namespaces (the spread
// case: messages of the same kind, many tenants). Each kind of load has
// its own namespaces and texts (a seed of its own), so that no case finds
// another's sessions, or texts in the embedding cache.
func hotEvents(n, sessions, namespaces, per int) [][]byte {
	per = max(per, 1)
	seed, ns := uint64(13), hotNamespace(n)
	if per > 1 {
		seed, ns = 15, fmt.Sprintf("bench-hot-%d-x%d", n, per)
	}
	if namespaces > 1 {
		seed++
	}
	g := corpus.New(seed)
	out := make([][]byte, 0, (n+per-1)/per)
	var group []memindex.Message
	for i := range n {
		s := (i / per) % sessions
		seq := int64(i/(per*sessions)*per + i%per + 1)
		key := fmt.Sprintf("chat-%d", s)
		if namespaces > 1 {
			ns = fmt.Sprintf("bench-many-%d-%02d", n, s%namespaces)
			if per > 1 {
				ns = fmt.Sprintf("bench-many-%d-x%d-%02d", n, per, s%namespaces)
			}
		}
		m := memindex.Message{Seq: seq, ID: fmt.Sprintf("%s/s1/%d", key, seq), Speaker: g.Speakers[int(seq)%len(g.Speakers)],
			Text: g.Sentence(12 + (i*7)%24), Timestamp: "2026-11-30T09:00:00Z"}
		var e memindex.Event
		switch group = append(group, m); {
		case per == 1:
			e = memindex.Event{Type: memindex.TypeMessage, Namespace: ns, SessionKey: key, SessionID: "s1",
				Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text, Timestamp: m.Timestamp}
		case len(group) == per || i == n-1:
			e = memindex.Event{Type: memindex.TypeMessages, Namespace: ns, SessionKey: key, SessionID: "s1", Messages: group}
		default:
			continue
		}
		b, _ := json.Marshal(e)
		out = append(out, b)
		group = group[:0]
	}
	return out
}

// hotLoads are the hot suite's loads by the case that first publishes
// each (many-fresh publishes many's, backlog one's): how many namespaces
// the sessions spread over and how many messages an event appends.
var hotLoads = []struct {
	key             string
	namespaces, per int
}{
	{HotCaseOne, 1, 1},
	{HotCaseMany, hotManyNamespaces, 1},
	{HotCaseBatched, 1, hotEventMessages},
	{HotCaseManyBatched, hotManyNamespaces, hotEventMessages},
}

// hotLoad returns the events of load key (hotLoads) for n messages over
// sessions sessions.
func hotLoad(key string, n, sessions int) [][]byte {
	for _, l := range hotLoads {
		if l.key == key {
			return hotEvents(n, sessions, l.namespaces, l.per)
		}
	}
	panic("bench: no hot load " + key)
}

// countMessages is how many messages events lines append (a line that
// is no event counts one).
func countMessages(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		var e struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(l, &e)
		n += max(1, len(e.Messages))
	}
	return n
}

// runHot runs the hot suite's memindex cases on n: the hot namespace's
// events hot (hotEvents, over sessions sessions), then as many messages of
// the same kind and sessions spread over 100 namespaces; then, each on a
// NATS server and worker of its own under dir-fresh-<round>, the spread
// case again and both loads in messages events of hotEventMessages; then
// hot again from a backlog, on a server and worker of its own under
// dir-<round>; then the transport floor of the four loads (runHotNATS,
// under dir-nats-<round>, its consumers acknowledging every batch events).
// Only the cases sel names run, and each after the first two
// sel.rounds times.
func runHot(ctx context.Context, h harness.Hooks, n harness.Node, dir string, hot [][]byte, sessions, batch int, sel hotSelection, say func(string, ...any)) ([]HotFigure, error) {
	var out []HotFigure
	messages := countMessages(hot)
	many := hotLoad(HotCaseMany, messages, sessions)
	hotBatched := hotLoad(HotCaseBatched, messages, sessions)
	manyBatched := hotLoad(HotCaseManyBatched, messages, sessions)
	spread := min(sessions, hotManyNamespaces)
	for _, c := range []struct {
		key, system     string
		namespaces, per int
		lines           [][]byte
	}{
		{HotCaseOne, HotMemindex, 1, 1, hot},
		{HotCaseMany, HotMemindexMany, spread, 1, many},
	} {
		if !sel.has(c.key) {
			continue
		}
		say("hot: %s, %d messages in %d sessions%s …", c.system, messages, sessions, spreadNote(c.namespaces))
		commits0, err := workerCommits(ctx, n)
		if err != nil {
			return nil, err
		}
		u0, t0 := processUsage(), time.Now()
		fig, err := ingest(ctx, h, n, c.system, c.lines, "")
		if err != nil {
			return nil, err
		}
		u, wall := processUsage().since(u0), time.Since(t0).Seconds()
		cpu := u.cpu.Seconds()
		commits, err := workerCommits(ctx, n)
		if err != nil {
			return nil, err
		}
		hf := HotFigure{System: c.system, Messages: messages, Sessions: sessions, Namespaces: c.namespaces, MessagesPerEvent: c.per,
			Seconds: fig.Seconds, PerSecond: float64(messages) / fig.Seconds,
			CPUMicrosPerMessage: cpu * 1e6 / float64(messages), CoresBusy: cpu / wall, Commits: int(commits - commits0),
			FaultsPerMessage: float64(u.faults) / float64(messages)}
		out = append(out, hf)
		sayHot(say, hf)
	}
	// These compare on fresh workers, each with a stream of its own: in
	// one worker, the cases that ran later ran slower, whichever they
	// were (BENCHMARKS.md). Each runs sel.rounds times; the figure is the
	// round of the median rate.
	for _, c := range []struct {
		key, system     string
		namespaces, per int
		lines           [][]byte
		mode            string
	}{
		{HotCaseManyFresh, HotMemindexManyFresh, spread, 1, many, IngestLive},
		{HotCaseBatched, HotMemindexBatched, 1, hotEventMessages, hotBatched, IngestLive},
		{HotCaseManyBatched, HotMemindexManyBatched, spread, hotEventMessages, manyBatched, IngestLive},
		{HotCaseBacklog, HotBacklog, 1, 1, hot, IngestBacklog},
	} {
		if !sel.has(c.key) {
			continue
		}
		d := dir + "-fresh"
		if c.mode == IngestBacklog {
			d = dir
		}
		hf, err := sel.run(say, func(r int) (HotFigure, error) {
			say("hot: %s, %d messages in %d sessions%s%s …", c.system, messages, sessions, spreadNote(c.namespaces), roundNote(r, sel.rounds))
			hf, err := runHotAlone(ctx, h, fmt.Sprintf("%s-%d", d, r), c.system, c.mode, c.lines, sessions)
			if err != nil {
				return HotFigure{}, fmt.Errorf("%s: %w", c.system, err)
			}
			hf.Namespaces, hf.MessagesPerEvent = c.namespaces, c.per
			if c.mode == IngestBacklog {
				say("  published alone in %.2fs (%.0f µs of CPU a message); then", hf.PublishSeconds, hf.PublishCPUMicrosPerMessage)
			}
			sayHot(say, hf)
			return hf, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, hf)
	}
	nats := []struct {
		system          string
		namespaces, per int
		lines           [][]byte
	}{{HotNATS, 1, 1, hot}, {HotNATSMany, spread, 1, many}, {HotNATSBatched, 1, hotEventMessages, hotBatched}, {HotNATSManyBatched, spread, hotEventMessages, manyBatched}}
	if !sel.has(HotCaseNATS) {
		nats = nil
	}
	for _, c := range nats {
		hf, err := sel.run(say, func(r int) (HotFigure, error) {
			say("hot: %s (publish, fetch, ack; nothing indexed), %d messages%s%s …", c.system, messages, spreadNote(c.namespaces), roundNote(r, sel.rounds))
			hf, err := runHotNATS(ctx, h, fmt.Sprintf("%s-nats-%d", dir, r), c.system, c.lines, sessions, batch)
			if err != nil {
				return HotFigure{}, fmt.Errorf("%s: %w", c.system, err)
			}
			hf.Namespaces, hf.MessagesPerEvent = c.namespaces, c.per
			say("  %.0f messages/s (%.2fs), %.0f µs of CPU a message, %.2f cores busy", hf.PerSecond, hf.Seconds, hf.CPUMicrosPerMessage, hf.CoresBusy)
			return hf, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, hf)
	}
	var b strings.Builder
	writeHotOverNATS(&b, out)
	if s := strings.TrimSpace(b.String()); s != "" {
		say("  %s", s)
	}
	return out, nil
}

// The hot suite's cases, as --hot-cases names them.
const (
	HotCaseOne         = "one"          // HotMemindex
	HotCaseMany        = "many"         // HotMemindexMany
	HotCaseManyFresh   = "many-fresh"   // HotMemindexManyFresh
	HotCaseBatched     = "batched"      // HotMemindexBatched
	HotCaseManyBatched = "many-batched" // HotMemindexManyBatched
	HotCaseBacklog     = "backlog"      // HotBacklog
	HotCaseNATS        = "nats"         // the four NATS-alone floors
	HotCaseFloors      = "floors"       // plain FTS5 and the built-in embedder, in process
)

// HotCases are the hot suite's cases in the order it runs them.
var HotCases = []string{HotCaseOne, HotCaseMany, HotCaseManyFresh, HotCaseBatched, HotCaseManyBatched, HotCaseBacklog, HotCaseNATS, HotCaseFloors}

// hotSelection is which hot cases run (none named: all) and how many
// rounds each fresh-worker case and NATS floor runs (at least 1).
type hotSelection struct {
	cases  []string
	rounds int
}

func (s hotSelection) has(key string) bool { return len(s.cases) == 0 || slices.Contains(s.cases, key) }

// run runs round s.rounds times and returns the round of the median rate
// (medianRound).
func (s hotSelection) run(say func(string, ...any), round func(r int) (HotFigure, error)) (HotFigure, error) {
	var rounds []HotFigure
	for r := range s.rounds {
		hf, err := round(r)
		if err != nil {
			return HotFigure{}, err
		}
		rounds = append(rounds, hf)
	}
	return medianRound(rounds, say), nil
}

// roundNote says which round of how many this is ("" with one round).
func roundNote(r, rounds int) string {
	if rounds <= 1 {
		return ""
	}
	return fmt.Sprintf(", round %d of %d", r+1, rounds)
}

// medianRound is the round of rounds with the median rate (the lower of
// the two middle ones for an even count), said when there are several.
func medianRound(rounds []HotFigure, say func(string, ...any)) HotFigure {
	if len(rounds) == 1 {
		return rounds[0]
	}
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b HotFigure) int { return cmp.Compare(a.PerSecond, b.PerSecond) })
	m := sorted[(len(sorted)-1)/2]
	rates := make([]string, len(sorted))
	for i, f := range sorted {
		rates[i] = fmt.Sprintf("%.0f", f.PerSecond)
	}
	say("  median of %d rounds: %.0f messages/s (rounds: %s)", len(rounds), m.PerSecond, strings.Join(rates, ", "))
	return m
}

// sayHot prints a memindex case's figure.
func sayHot(say func(string, ...any), hf HotFigure) {
	say("  %.0f messages/s (%.2fs), %.0f µs of CPU a message, %.2f cores busy, %.2f page faults a message, %d commits (%s messages a batch)",
		hf.PerSecond, hf.Seconds, hf.CPUMicrosPerMessage, hf.CoresBusy, hf.FaultsPerMessage, hf.Commits, meanBatch(hf))
}

// spreadNote says how many namespaces a spread case really spans when
// there are fewer sessions than hotManyNamespaces ("" otherwise).
func spreadNote(namespaces int) string {
	if namespaces == 1 || namespaces >= hotManyNamespaces {
		return ""
	}
	return fmt.Sprintf(" (spread over %d namespaces: one a session)", namespaces)
}

// runHotAlone runs lines (over sessions sessions) through a NATS server of
// its own under dir and one worker holding every partition, in mode:
// IngestLive starts the worker, then publishes and times from the first
// publish to the last commit; IngestBacklog publishes with no worker
// running, then starts one and times it from its first fetch to its last
// commit (the cluster suite's modes).
func runHotAlone(ctx context.Context, h harness.Hooks, dir, system, mode string, lines [][]byte, sessions int) (HotFigure, error) {
	var hf HotFigure
	err := withBenchCluster(ctx, h, dir, func(c *benchCluster) error {
		run := c.IngestLive
		if mode == IngestBacklog {
			run = c.IngestBacklog
		}
		fig, err := run(ctx, []string{fmt.Sprintf("0-%d", memindex.DefaultPartitions-1)}, lines)
		if err != nil {
			return err
		}
		commits, err := workerCommits(ctx, c.nodes[0])
		if err != nil {
			return err
		}
		hf = HotFigure{System: system, Messages: fig.Messages, Sessions: sessions, Seconds: fig.Seconds, PerSecond: fig.PerSecond,
			CPUMicrosPerMessage: fig.CPUMicrosPerMessage, CoresBusy: fig.CoresBusy, Commits: int(commits), FaultsPerMessage: fig.FaultsPerMessage,
			PublishSeconds: fig.PublishSeconds, PublishCPUMicrosPerMessage: fig.PublishCPUMicrosPerMessage}
		if mode == IngestLive {
			hf.PublishSeconds = 0 // the publishing overlapped the run
		}
		return nil
	})
	return hf, err
}

// workerCommits asks the workers for their status over NATS, as a user
// does, and adds up their partitions' commits.
func workerCommits(ctx context.Context, n harness.Node) (uint64, error) {
	// Status gathers answers for the whole wait; the one worker here
	// answers in milliseconds once its run is over, so it waits as long as
	// `memindex status` does by default, and longer only when no answer
	// came (a 2-second wait was a tenth of every hot-ab.sh process).
	c := client.NewClient(n.Conn())
	var sts []memindex.StatusResponse
	var err error
	for _, wait := range []time.Duration{500 * time.Millisecond, 2 * time.Second} {
		if sts, err = c.Status(ctx, wait); len(sts) > 0 {
			break
		}
	}
	if len(sts) == 0 {
		return 0, fmt.Errorf("hot: commits: %w", err)
	}
	var sum uint64
	for _, st := range sts {
		for _, p := range st.Partitions {
			sum += p.Commits
		}
	}
	return sum, nil
}

// meanBatch is f's messages over its commits ("—" without commits).
func meanBatch(f HotFigure) string {
	if f.Commits <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", float64(f.Messages)/float64(f.Commits))
}

// hotMessage is a hot event decoded for the floors.
type hotMessage struct {
	memindex.Event
	at time.Time
}

// runHotFloors times the floors over the hot namespace's events lines (over
// sessions sessions): plain FTS5 in a SQLite file in dir (WAL, synchronous
// NORMAL, as a shard) with a transaction per batch messages and with one,
// and the built-in embedder on each message's embedded text (its context
// as the chunker makes it).
func runHotFloors(ctx context.Context, dir string, lines [][]byte, sessions, batch int, say func(string, ...any)) ([]HotFigure, error) {
	msgs := make([]hotMessage, len(lines))
	for i, l := range lines {
		e, err := memindex.DecodeEvent(l)
		if err != nil {
			return nil, fmt.Errorf("decode event %d: %w", i, err)
		}
		msgs[i] = hotMessage{Event: e, at: e.Time()}
	}
	var out []HotFigure
	fig := func(system string, t time.Time) {
		el := time.Since(t).Seconds()
		out = append(out, HotFigure{System: system, Messages: len(msgs), Sessions: sessions, Seconds: el, PerSecond: float64(len(msgs)) / el})
		say("  %-34s %7.2fs  %9.0f messages/s", system, el, float64(len(msgs))/el)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		system string
		per    int
	}{{HotFTSBatch, batch}, {HotFTSOne, len(msgs)}} {
		t := time.Now()
		if err := plainFTS5(ctx, filepath.Join(dir, fmt.Sprintf("fts-%d.db", c.per)), msgs, c.per); err != nil {
			return nil, fmt.Errorf("%s: %w", c.system, err)
		}
		fig(c.system, t)
	}

	texts := hotEmbedTexts(msgs)
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: vecDims})
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		system string
		procs  int
	}{{HotEmbed1, 1}, {HotEmbedN, runtime.NumCPU()}} {
		t := time.Now()
		if err := embedAll(ctx, emb, texts, c.procs); err != nil {
			return nil, err
		}
		fig(c.system, t)
	}
	return out, nil
}

// plainFTS5 inserts msgs into a new FTS5 table at path, one transaction per
// per messages.
func plainFTS5(ctx context.Context, path string, msgs []hotMessage, per int) error {
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(path + s)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE msg USING fts5(body, session_key UNINDEXED, session_id UNINDEXED, seq UNINDEXED, message_id UNINDEXED, ts UNINDEXED)`); err != nil {
		return err
	}
	for start := 0; start < len(msgs); start += per {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO msg(body, session_key, session_id, seq, message_id, ts) VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			tx.Rollback()
			return err
		}
		for _, m := range msgs[start:min(start+per, len(msgs))] {
			if _, err := st.ExecContext(ctx, m.Speaker+": "+m.Text, m.SessionKey, m.SessionID, m.Seq, m.ID, m.at.Unix()); err != nil {
				st.Close()
				tx.Rollback()
				return err
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// hotEmbedTexts returns the text the worker embeds for each of msgs: the
// message with its context (date, the two messages before it).
func hotEmbedTexts(msgs []hotMessage) []string {
	bySession := map[string][]chunker.Message{}
	var order []string
	for _, m := range msgs {
		k := m.SessionKey + "\x00" + m.SessionID
		if _, ok := bySession[k]; !ok {
			order = append(order, k)
		}
		bySession[k] = append(bySession[k], chunker.Message{Seq: m.Seq, ID: m.ID, Role: m.Role, Speaker: m.Speaker, Text: m.Text, Time: m.at})
	}
	cc := chunker.Config{BudgetTokens: 400}
	texts := make([]string, 0, len(msgs))
	for _, k := range order {
		for _, c := range chunker.Session(cc, hotNamespace(len(msgs))+"\x00"+k, bySession[k]) {
			texts = append(texts, chunker.EmbedText(c.Context, c.Text))
		}
	}
	return texts
}

// embedAll embeds texts with emb in batches of 64 on procs goroutines.
func embedAll(ctx context.Context, emb embedder.Embedder, texts []string, procs int) error {
	const per = 64
	p := pool.New().WithErrors().WithContext(ctx).WithMaxGoroutines(procs)
	for start := 0; start < len(texts); start += per {
		part := texts[start:min(start+per, len(texts))]
		p.Go(func(ctx context.Context) error {
			_, err := emb.Embed(ctx, embedder.Request{Texts: part, Kind: embedder.KindDocument})
			return err
		})
	}
	return p.Wait()
}
