package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// publishResult is what publish reports (--json prints it).
type publishResult struct {
	Published  int64   `json:"published"`
	Duplicates int64   `json:"duplicates"`
	Failed     int64   `json:"failed"`
	Rejected   int64   `json:"rejected"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"perSecond"`
	LastSeq    uint64  `json:"lastSeq"`
}

func runPublish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var conn connFlags
	fs := newFlagSet("publish", "--namespace NS [flags] FILE.jsonl|-")
	conn.register(fs, nats.DefaultURL)
	ns := fs.String("namespace", env("MEMINDEX_NAMESPACE", ""), "namespace of events that do not name one (MEMINDEX_NAMESPACE)")
	raw := fs.Bool("raw", false, "publish each line as it is, without adding type or namespace or checking it")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	maxPending := fs.Int("max-pending", 4096, "unacknowledged publishes in flight")
	filesDir := fs.String("files", "", "publish the .md files under this directory as memory files (file.upserted), instead of a JSONL file")
	dirPath := fs.String("dir-path", "", "with --files: the project the files belong to (\"\": global)")
	var excludes []string
	fs.Func("exclude", "with --files: skip paths (relative to the directory) matching this glob; repeatable", func(g string) error {
		if _, err := filepath.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q: %w", g, err)
		}
		excludes = append(excludes, g)
		return nil
	})
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *filesDir != "" {
		if *ns == "" {
			return errors.New("--files needs --namespace")
		}
		lines, err := memoryFileEvents(*filesDir, *dirPath, excludes)
		if err != nil {
			return err
		}
		stdin, pos = bytes.NewReader(lines), []string{"-"}
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("name one FILE.jsonl, or - for stdin (or --files DIR)")
	}
	if *ns != "" && !memindex.ValidNamespace(*ns) {
		return fmt.Errorf("--namespace %q is not 1-64 characters of [A-Za-z0-9_-]", *ns)
	}
	in, size := stdin, int64(0)
	if name := pos[0]; name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	pt, err := startPublishTrace(ctx, os.Getenv)
	if err != nil {
		return err
	}
	nc, err := conn.Connect("memindex publish")
	if err != nil {
		return err
	}
	defer nc.Close()
	// An ack timeout, so a publish the server refuses (a permissions
	// violation) fails instead of waiting forever.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(*maxPending), jetstream.WithPublishAsyncTimeout(conn.Timeout))
	if err != nil {
		return err
	}

	var res publishResult
	var read atomic.Int64
	start := time.Now()
	stopProgress := func() {}
	if isTerminal(stderr) && !*asJSON {
		stopProgress = progress(stderr, start, size, &read, &res)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), memindex.MaxEventBytes+1)
	var futures []jetstream.PubAckFuture
	line := 0
	settle := func() {
		for _, f := range futures {
			select {
			case ack := <-f.Ok():
				if ack.Duplicate {
					atomic.AddInt64(&res.Duplicates, 1)
				} else {
					atomic.AddInt64(&res.Published, 1)
				}
				if ack.Sequence > res.LastSeq {
					res.LastSeq = ack.Sequence
				}
			case err := <-f.Err():
				atomic.AddInt64(&res.Failed, 1)
				fmt.Fprintf(stderr, "publish to %s failed: %v\n", f.Msg().Subject, err)
			}
		}
		futures = futures[:0]
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		read.Add(int64(len(b)) + 1)
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		msg, err := eventMsg(b, *ns, *raw)
		if err != nil {
			res.Rejected++
			fmt.Fprintf(stderr, "line %d: %v (not published)\n", line, err)
			continue
		}
		pt.inject(msg)
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			res.Failed++
			fmt.Fprintf(stderr, "line %d: publish: %v\n", line, err)
			continue
		}
		futures = append(futures, f)
		if len(futures) >= *maxPending {
			settle()
		}
		if ctx.Err() != nil {
			break
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	settle()
	stopProgress()
	if err := pt.end(context.WithoutCancel(ctx), res.Published, res.Failed); err != nil {
		fmt.Fprintf(stderr, "flush traces: %v\n", err)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read line %d: %w", line+1, err)
	}
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.PerSecond = float64(res.Published) / res.Seconds
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "published %d events (%d duplicates, %d rejected, %d failed) in %.2fs, %.0f/s; last stream seq %d\n",
			res.Published, res.Duplicates, res.Rejected, res.Failed, res.Seconds, res.PerSecond, res.LastSeq)
	}
	if res.Failed > 0 || res.Rejected > 0 {
		return fmt.Errorf("%d lines rejected, %d publishes failed", res.Rejected, res.Failed)
	}
	return nil
}

// eventMsg turns one JSONL line into a NATS message on its namespace's event
// subject. Unless raw, it adds "type":"message" and the namespace when the
// line lacks them and sets Nats-Msg-Id so a re-publish is de-duplicated.
func eventMsg(line []byte, ns string, raw bool) (*nats.Msg, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		if raw && ns != "" {
			m := nats.NewMsg(memindex.EventSubject(ns))
			m.Data = append([]byte(nil), line...)
			return m, nil
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	str := func(k string) string {
		var s string
		if v, ok := obj[k]; ok {
			_ = json.Unmarshal(v, &s)
		}
		return s
	}
	evNS := str("namespace")
	if evNS == "" {
		evNS = ns
	}
	if evNS == "" {
		return nil, errors.New("no namespace: the line has none and --namespace is not set")
	}
	if !memindex.ValidNamespace(evNS) && !raw {
		return nil, fmt.Errorf("namespace %q is not 1-64 characters of [A-Za-z0-9_-]", evNS)
	}
	data := line
	if !raw {
		if _, ok := obj["type"]; !ok {
			obj["type"] = json.RawMessage(`"message"`)
		}
		if _, ok := obj["namespace"]; !ok {
			obj["namespace"], _ = json.Marshal(evNS)
		}
		var err error
		if data, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	} else {
		data = append([]byte(nil), line...)
	}
	m := nats.NewMsg(memindex.EventSubject(evNS))
	m.Data = data
	m.Header.Set(nats.MsgIdHdr, eventID(evNS, obj, str, data))
	return m, nil
}

// eventID is the de-duplication id of an event: its eventId, or for a
// message its session position, or else the hash of its payload.
func eventID(ns string, obj map[string]json.RawMessage, str func(string) string, data []byte) string {
	if id := str("eventId"); id != "" {
		return ns + "/" + id
	}
	if t := str("type"); t == "" || t == memindex.TypeMessage {
		if seq, ok := obj["seq"]; ok && str("sessionKey") != "" {
			return ns + "/" + str("sessionKey") + "/" + str("sessionId") + "/" + string(seq)
		}
	}
	h := sha256.Sum256(data)
	return ns + "/" + hex.EncodeToString(h[:16])
}

// progress draws a one-line progress bar on w until the returned stop is called.
func progress(w io.Writer, start time.Time, size int64, read *atomic.Int64, res *publishResult) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	draw := func() {
		n := atomic.LoadInt64(&res.Published) + atomic.LoadInt64(&res.Duplicates)
		rate := float64(n) / max(time.Since(start).Seconds(), 1e-3)
		if size > 0 {
			frac := min(float64(read.Load())/float64(size), 1)
			const width = 30
			bar := strings.Repeat("█", int(frac*width)) + strings.Repeat("░", width-int(frac*width))
			fmt.Fprintf(w, "\r%s %3.0f%%  %s events  %.0f/s ", bar, frac*100, strconv.FormatInt(n, 10), rate)
		} else {
			fmt.Fprintf(w, "\r%d events  %.0f/s ", n, rate)
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				draw()
				fmt.Fprintln(w)
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// memoryFileEvents walks dir for .md files and returns one file.upserted
// event per file, as JSONL, with paths relative to dir.
func memoryFileEvents(dir, dirPath string, excludes []string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		for _, g := range excludes {
			if ok, _ := filepath.Match(g, rel); ok {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(path), ".md") {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if len(content) > memindex.MaxEventBytes-4096 {
			return fmt.Errorf("%s is %d bytes, over the %d an event may carry", rel, len(content), memindex.MaxEventBytes-4096)
		}
		sum := sha256.Sum256(content)
		return enc.Encode(memindex.Event{Type: memindex.TypeFileUpserted, Path: rel, DirPath: dirPath,
			Content: string(content), ContentHash: hex.EncodeToString(sum[:])})
	})
	if err != nil {
		return nil, fmt.Errorf("--files %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}
