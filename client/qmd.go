package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"memindex"
)

// The qmd backend runs QMD (github.com/tobi/qmd, npm @tobilu/qmd), a local
// BM25/vector search tool over markdown collections, as a subprocess.
//
// Search runs
//
//	qmd search --json -n <k> [--min-score <s>] [-c <collection>]... -- <query>
//
// (`search` is QMD's BM25 search: no model needed) and reads from its
// standard output a JSON array of results. Fields relied on, all optional
// but the location: "file" (or "path"; e.g. "qmd://notes/a.md"), "docid"
// ("#abc123"), "score" (0..1), "line" (the snippet's first line), "title",
// "snippet" (its leading "@@ -L,N @@ (...)" header line is dropped) and
// "body" (with --full). An object {"results": [...]} is read too, and
// unknown fields are ignored.
//
// Read of a file runs `qmd get --from <from> -l <count> --no-line-numbers
// -- <path>` and takes its standard output as the lines. Sync runs
// `qmd update` (re-index the collections).
type qmd struct {
	cfg QMDConfig
}

var _ Manager = (*qmd)(nil)

const defaultQMDTimeout = 30 * time.Second

func openQMD(cfg QMDConfig) (*qmd, error) {
	if cfg.Command == "" {
		cfg.Command = "qmd"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultQMDTimeout
	}
	return &qmd{cfg: cfg}, nil
}

// run runs qmd with args and returns its standard output. A missing
// executable, a non-zero exit (with its standard error) and a timeout are
// errors wrapping memindex.ErrUnavailable.
func (q *qmd) run(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, q.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, q.cfg.Command, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return nil, fmt.Errorf("qmd backend: %q not found on PATH: install QMD (npm install -g @tobilu/qmd) or set qmd.command: %w", q.cfg.Command, memindex.ErrUnavailable)
	case ctx.Err() != nil && err != nil:
		return nil, fmt.Errorf("qmd backend: %s %s: %w after %s: %w", q.cfg.Command, args[0], ctx.Err(), q.cfg.Timeout, memindex.ErrUnavailable)
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return nil, fmt.Errorf("qmd backend: %s %s: %v: %s: %w", q.cfg.Command, args[0], err, msg, memindex.ErrUnavailable)
	}
	return stdout.Bytes(), nil
}

// qmdResult is one result of `qmd search --json`.
type qmdResult struct {
	DocID   string          `json:"docid"`
	Score   json.Number     `json:"score"`
	File    string          `json:"file"`
	Path    string          `json:"path"`
	Line    json.RawMessage `json:"line"`
	Title   string          `json:"title"`
	Snippet string          `json:"snippet"`
	Body    string          `json:"body"`
	Context string          `json:"context"`
}

var snippetHeaderRE = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? @@[^\n]*\n?`)

// parseQMD decodes QMD's search JSON into hits, tolerantly (see qmd).
func parseQMD(out []byte) ([]memindex.Hit, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return []memindex.Hit{}, nil
	}
	var rs []qmdResult
	if out[0] == '{' {
		var wrapped struct {
			Results []qmdResult `json:"results"`
		}
		if err := json.Unmarshal(out, &wrapped); err != nil {
			return nil, fmt.Errorf("qmd backend: decode search output: %w", err)
		}
		rs = wrapped.Results
	} else if err := json.Unmarshal(out, &rs); err != nil {
		return nil, fmt.Errorf("qmd backend: decode search output (want a JSON array of results): %w", err)
	}
	hits := make([]memindex.Hit, 0, len(rs))
	for _, r := range rs {
		path := r.File
		if path == "" {
			path = r.Path
		}
		if path == "" {
			continue // nothing to point at
		}
		h := memindex.Hit{ID: r.DocID, Source: memindex.SourceFiles, Path: path}
		if h.ID == "" {
			h.ID = path
		}
		if f, err := r.Score.Float64(); err == nil {
			h.Score = min(max(f, 0), 1)
		}
		var line float64
		if json.Unmarshal(r.Line, &line) == nil && line > 0 {
			h.LineStart = int(line)
		}
		snippet := r.Snippet
		if m := snippetHeaderRE.FindStringSubmatch(snippet); m != nil {
			if h.LineStart == 0 {
				h.LineStart, _ = strconv.Atoi(m[1])
			}
			snippet = snippet[len(m[0]):]
		}
		h.Snippet = snippet
		h.Text = r.Body
		if h.Text == "" {
			h.Text = snippet
		}
		if h.Snippet == "" {
			h.Snippet = r.Title
		}
		if h.LineStart > 0 {
			h.LineEnd = h.LineStart + max(0, strings.Count(strings.TrimRight(snippet, "\n"), "\n"))
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// Search runs `qmd search --json` (see qmd). QMD knows neither sessions,
// namespaces (unless qmd.namespaceCollection) nor time: filters it cannot
// apply are listed in Degraded.
func (q *qmd) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	start := time.Now()
	if err := req.Normalize(); err != nil {
		return memindex.SearchResponse{}, fmt.Errorf("invalid search request: %w", err)
	}
	args := []string{"search", "--json", "-n", strconv.Itoa(req.K)}
	if req.MinScore > 0 {
		args = append(args, "--min-score", strconv.FormatFloat(req.MinScore, 'g', -1, 64))
	}
	cols := q.cfg.Collections
	if q.cfg.NamespaceCollection {
		cols = append(cols[:len(cols):len(cols)], req.Namespace)
	}
	for _, c := range cols {
		args = append(args, "-c", c)
	}
	args = append(args, "--", req.Query)
	out, err := q.run(ctx, args...)
	if err != nil {
		return memindex.SearchResponse{}, fmt.Errorf("search %s: %w", req.Namespace, err)
	}
	hits, err := parseQMD(out)
	if err != nil {
		return memindex.SearchResponse{}, fmt.Errorf("search %s: %w", req.Namespace, err)
	}
	if len(hits) > req.K {
		hits = hits[:req.K]
	}
	if req.Budget > 0 && len(hits) > req.Budget { // a file hit counts one
		hits = hits[:req.Budget]
	}
	took := float64(time.Since(start).Microseconds()) / 1000
	resp := memindex.SearchResponse{Type: "search.result", Version: 1, Namespace: req.Namespace, Hits: hits,
		Partition: -1, TookMs: took, Backend: BackendQMD}
	resp.Legs.Keyword = memindex.Leg{Ran: true, Answered: true, Hits: len(hits), TookMs: took}
	resp.Legs.Vector.Reason = "qmd search is keyword-only (BM25)"
	resp.Used = memindex.Usage{Hits: len(hits), Messages: len(hits), Budget: req.Budget}
	var ignored []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"sessionKey", req.SessionKey != ""}, {"sessionId", req.SessionID != ""}, {"dirPath", req.DirPath != ""},
		{"after", req.After != ""}, {"before", req.Before != ""}, {"updatedAfter", req.UpdatedAfter != ""},
		{"sources", len(req.Sources) > 0 && !(len(req.Sources) == 1 && req.Sources[0] == memindex.SourceFiles)},
		{"mode", req.Mode != memindex.ModeHybrid && req.Mode != memindex.ModeKeyword},
		{"budgetTokens", req.BudgetTokens > 0}, {"around", req.Around > 0}} {
		if f.set {
			ignored = append(ignored, f.name)
		}
	}
	if len(ignored) > 0 {
		resp.Degraded = append(resp.Degraded, "qmd cannot apply "+strings.Join(ignored, ", ")+": ignored")
	}
	return resp, nil
}

// Read reads a file's lines with `qmd get`; sessions are ErrUnsupported.
func (q *qmd) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	if err := req.Normalize(); err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("invalid read request: %w", err)
	}
	if req.Path == "" {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: qmd holds files, not sessions: %w", req.Namespace, ErrUnsupported)
	}
	out, err := q.run(ctx, "get", "--from", strconv.FormatInt(req.From, 10), "-l", strconv.Itoa(req.Count), "--no-line-numbers", "--", req.Path)
	if err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, err)
	}
	resp := memindex.ReadResponse{Type: "read.result", Version: 1, Namespace: req.Namespace, Path: req.Path, Messages: []memindex.ReadMessage{}, Lines: []string{}}
	if s := strings.TrimRight(string(out), "\n"); s != "" {
		resp.Lines = strings.Split(s, "\n")
	}
	return resp, nil
}

// Status reports whether the qmd executable is found, as worker
// "qmd:<command>".
func (q *qmd) Status(context.Context) ([]memindex.StatusResponse, error) {
	st := memindex.StatusResponse{Type: "status", Version: 1, Worker: "qmd:" + q.cfg.Command, Backend: BackendQMD, Partitions: []memindex.PartitionStatus{}}
	if _, err := exec.LookPath(q.cfg.Command); err != nil {
		return nil, fmt.Errorf("status: qmd backend: %q not found: %w", q.cfg.Command, memindex.ErrUnavailable)
	}
	st.Ready = true
	return []memindex.StatusResponse{st}, nil
}

// Sync runs `qmd update`, which re-indexes QMD's collections.
func (q *qmd) Sync(ctx context.Context, _ SyncRequest) error {
	if _, err := q.run(ctx, "update"); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

func (q *qmd) ProbeEmbeddings(context.Context) error {
	return fmt.Errorf("probe embeddings: the qmd backend runs qmd search (BM25): %w", ErrUnsupported)
}

func (q *qmd) ProbeVectors(context.Context) error {
	return fmt.Errorf("probe vectors: the qmd backend runs qmd search (BM25): %w", ErrUnsupported)
}

func (q *qmd) Close(context.Context) error { return nil }
